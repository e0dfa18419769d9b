# The checkrein sidecar: the gateway plus the bundled incident monitor it starts over stdio.
FROM python:3.12-slim
RUN pip install --no-cache-dir checkrein
COPY checkrein.toml /etc/checkrein/checkrein.toml
RUN mkdir -p /var/lib/checkrein/audit
EXPOSE 8765
CMD ["checkrein", "serve", "--config", "/etc/checkrein/checkrein.toml", "--transport", "http", "--host", "0.0.0.0", "--port", "8765"]
