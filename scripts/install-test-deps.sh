#!/usr/bin/env bash
# Installs everything the test suite needs into the given venv (default .venv):
# the test extras, the real DeepSpeed (CPU torch, pinned), a second venv with
# DeepSpeed 0.19.5 for the version-profile differential tests, and Debian's
# chromium for the browser tests.
set -euo pipefail
venv=${1:-.venv}
"$venv/bin/pip" install -q -e ".[test,deepspeed]"

# The C++ ops the real-DeepSpeed tests load (tests/oracle/ops_cache.py PREBUILT_OPS), JIT-built now in the
# background: pip below keeps one core busy, the build takes the other, and the test workers find them built.
prebuild_pids=()
prebuild() {  # prebuild PYTHON: that interpreter's DeepSpeed's ops, logged to .torch_extensions/prebuild-*.log
    mkdir -p .torch_extensions
    "$1" tests/oracle/prebuild_ops.py >".torch_extensions/prebuild-$2.log" 2>&1 &
    prebuild_pids+=($!)
}
prebuild "$venv/bin/python" main

# DeepSpeed 0.19.5 lives in its own venv: one interpreter cannot import two versions.
if [ ! -x .venv-ds0195/bin/python ] || ! .venv-ds0195/bin/python -c "import deepspeed" 2>/dev/null; then
    python3 -m venv .venv-ds0195
    .venv-ds0195/bin/pip install -q --upgrade pip
    .venv-ds0195/bin/pip install -q "torch==2.13.0" "deepspeed==0.19.5" "hjson"
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

# Debian packages: chromium for the browser tests, libaio-dev so DeepSpeed can build its async I/O op
# (the NVMe preset really swaps to disk in the real-DeepSpeed tests), nginx for the replicas test.
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

# the op builds started above: a failed build is not an install failure (the test that loads the op builds it
# again, or shows its error), but it is said
for pid in "${prebuild_pids[@]}"; do
    wait "$pid" || echo "install-test-deps: an op prebuild failed; the tests will build it (see .torch_extensions/prebuild-*.log)" >&2
done
grep -h "prebuild-ops" .torch_extensions/prebuild-*.log || true
