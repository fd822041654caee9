# DeepSpeed Config Studio: the app alone, for a team server (several replicas: see deploy/nginx.conf and the README).
# Build: docker build -t dsconfig-studio .   Run: docker run -p 8501:8501 dsconfig-studio
# No torch, DeepSpeed, browsers or test tools: only the app's runtime dependencies from pyproject.toml.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 10001 studio
WORKDIR /app

# What the app needs at run time, nothing else (tests/, scripts/ and the virtual environments stay out).
COPY pyproject.toml setup.py README.md ./
COPY core ./core
COPY presets ./presets
RUN pip install .
COPY ui ./ui
COPY pages ./pages
COPY .streamlit ./.streamlit
COPY app.py ./

USER studio
EXPOSE 8501
# Server settings are in .streamlit/config.toml; only where to listen is said here.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).status != 200)"]
CMD ["streamlit", "run", "app.py", "--server.address=0.0.0.0", "--server.port=8501", "--server.headless=true"]
