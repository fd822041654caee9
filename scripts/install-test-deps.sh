#!/usr/bin/env bash
# Installs everything the test suite needs into the given venv (default .venv):
# the test extras, the real DeepSpeed (CPU torch, pinned) and its C++ ops (built in
# the background), a second venv with DeepSpeed 0.19.5 and older releases side by side
# for the version differential tests, and Debian's chromium for the browser tests.
set -euo pipefail
venv=${1:-.venv}

# Debian packages: chromium for the browser tests, libaio-dev so DeepSpeed can build its async I/O op (the NVMe
# preset really swaps to disk in `make presets-releases`; CI does not build the op), nginx for the replicas test.
missing=()
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
dpkg -s libaio-dev >/dev/null 2>&1 || missing+=(libaio-dev)
# nginx: the test of deploy/nginx.conf runs two app replicas behind it on loopback
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
if [ ${#missing[@]} -gt 0 ]; then
    sudo_cmd=()
    if [ "$(id -u)" != "0" ]; then
        if ! command -v sudo >/dev/null 2>&1; then
            echo "install-test-deps: need root or sudo to install Debian's ${missing[*]} (apt-get install ${missing[*]})" >&2
            exit 1
        fi
        sudo_cmd=(sudo -n)  # never wait for a password prompt: CI has no standard input
    fi
    "${sudo_cmd[@]}" apt-get update -qq
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# torch and DeepSpeed first: the op build below starts as soon as they are in, beside the rest of the installs
"$venv/bin/pip" install -q -e ".[deepspeed]"

# The C++ ops the real-DeepSpeed tests load (tests/oracle/ops_cache.py PREBUILT_OPS), JIT-built in the background
# while pip installs the rest, in the order the tests need them, and waited for at the end: the tests start with
# them built. (Letting the tests run beside the build was measured slower with a cold pip cache, 2,522 s against
# about 2,314 s: the build's compiles then compete with the test workers; BENCHMARKS.md, stop 37.)
prebuild_pids=()
prebuild() {  # prebuild PYTHON NAME: that interpreter's DeepSpeed's ops, logged to .torch_extensions/prebuild-NAME.log
    mkdir -p .torch_extensions
    "$1" tests/oracle/prebuild_ops.py >".torch_extensions/prebuild-$2.log" 2>&1 </dev/null &
    prebuild_pids+=($!)
}
prebuild "$venv/bin/python" main

"$venv/bin/pip" install -q -e ".[test,deepspeed]"

# DeepSpeed 0.19.5 lives in its own venv (one interpreter cannot import two versions). The venv reads every other
# package, torch included, from the main venv through a .pth file, so it installs no second torch; its own
# site-packages come first on sys.path, so its `deepspeed` is 0.19.5. The .pth adds the main site-packages with
# site.addsitedir, which also runs that folder's own .pth files: setuptools' distutils shim among them (a bare path
# line would not, and 0.19.5's op builder, importing the standard library's distutils before torch imports
# setuptools, then finds no libaio and refuses the NVMe swap). The main venv's pip builds it (its setuptools has
# bdist_wheel; the bare venv's has no pip at all).
ds0195_ok() { .venv-ds0195/bin/python -c "import deepspeed, sys; sys.exit(deepspeed.__version__ != '0.19.5')" 2>/dev/null; }
if [ ! -x .venv-ds0195/bin/python ] || ! ds0195_ok; then
    rm -rf .venv-ds0195
    python3 -m venv --without-pip .venv-ds0195
    main_site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    own_site=$(.venv-ds0195/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "import site; site.addsitedir('$main_site')" >"$own_site/main-venv.pth"
    DS_BUILD_OPS=0 "$venv/bin/pip" install -q --no-deps --no-build-isolation --target "$own_site" "deepspeed==0.19.5"
    ds0195_ok
fi

# --- versions block (owner: DeepSpeed release profiles; tests/test_versions_differential.py) ---------------
# Older releases side by side, sharing this venv's torch and dependencies: pure-Python installs without
# dependencies or build isolation (DS_BUILD_OPS=0: no ops are compiled), a few seconds each.
for ds_release in 0.16.9 0.17.6 0.18.9 0.19.6 0.19.7; do
    if [ ! -f ".venv-ds/$ds_release/deepspeed/__init__.py" ]; then
        rm -rf ".venv-ds/$ds_release"
        DS_BUILD_OPS=0 "$venv/bin/pip" install -q --no-deps --no-build-isolation \
            --target ".venv-ds/$ds_release" "deepspeed==$ds_release"
    fi
done
# --- end of versions block ---------------------------------------------------------------------------------

# the op builds started above: a failed build is not an install failure (the test that loads the op builds it
# again, or shows its error), but it is said
for pid in "${prebuild_pids[@]}"; do
    wait "$pid" || echo "install-test-deps: an op prebuild failed; the tests will build it (see .torch_extensions/prebuild-*.log)" >&2
done
grep -h "prebuild-ops" .torch_extensions/prebuild-*.log || true
