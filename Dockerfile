# acp-proxy in a container: a transparent recording proxy for the Agent Client Protocol.
#
# Build:
#   docker build -t acp-proxy .
#
# Run (the image's entrypoint is `acp-proxy`; recordings go to the volume mounted at /data):
#   docker run -i --rm --init -v acp-data:/data acp-proxy record -- <agent command>
#   docker run --rm acp-proxy --help
#
#   -i       is required: the ACP client talks to the agent over stdin/stdout.
#   no -t    ever: a terminal would rewrite the protocol's bytes (\n becomes \r\n).
#   --init   reaps processes the agent leaves behind and passes `docker stop` on.
#   -v       keeps recordings after the container is gone; every acp-proxy command in this
#            image uses /data/recordings.sqlite (ACP_PROXY_DB), so later runs with the same
#            volume see earlier recordings. `--db` or `-e ACP_PROXY_DB=...` chooses another.
#
# The agent runs inside the container, so it must be installed in the image. This image
# has only acp-proxy and Python; extend it with your agent:
#
#   FROM acp-proxy
#   USER root
#   RUN pip install --no-cache-dir my-agent==1.2.3     # or apt-get / npm install -g ...
#   USER 10001:10001
#
#   docker build -t my-agent-recorded .
#   docker run -i --rm --init -v acp-data:/data -v "$PWD:$PWD" -w "$PWD" \
#       my-agent-recorded record -- my-agent --its-flags
#
# That last line is what goes in the editor's agent settings. ACP clients send the project
# folder as an absolute host path, hence the project mounted at the same path (-v/-w above).
# Processes here run as uid 10001, which must be allowed to write where the agent writes.

FROM python:3.11-slim

LABEL org.opencontainers.image.title="acp-proxy" \
      org.opencontainers.image.description="A transparent recording proxy for the Agent Client Protocol" \
      org.opencontainers.image.licenses="Apache-2.0"

# A fixed numeric uid/gid, so that `USER` below is checkable (e.g. Kubernetes runAsNonRoot)
# and so that volume ownership is the same in every build. /data is created here, owned by
# that user, before it is declared a volume: a new named volume starts with this ownership.
RUN groupadd --system --gid 10001 acp \
    && useradd --system --uid 10001 --gid acp --no-log-init --create-home \
       --home-dir /home/acp --shell /usr/sbin/nologin acp \
    && mkdir /data \
    && chown acp:acp /data

# .dockerignore lets only the files the package build needs into the context.
WORKDIR /src
COPY . .
RUN pip install --no-cache-dir --root-user-action=ignore . \
    && rm -rf /src

ENV ACP_PROXY_DB=/data/recordings.sqlite
VOLUME ["/data"]
WORKDIR /home/acp
USER 10001:10001

ENTRYPOINT ["acp-proxy"]
CMD ["--help"]
