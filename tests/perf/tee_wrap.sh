#!/usr/bin/env bash
# The tee baseline of the performance benchmark: what users do today to see ACP traffic, a
# shell wrapper that copies each direction to a file while passing it on.
#
#   usage: tee_wrap.sh LOGDIR AGENT_COMMAND...
#
#   client -> tee LOGDIR/client-to-agent.jsonl -> agent -> tee LOGDIR/agent-to-client.jsonl -> client
#
# The agent's stderr goes straight through (not logged). It ends when the client closes stdin:
# the first tee sees end of file, the agent then, the second tee last.
set -u
logdir=$1
shift
mkdir -p "$logdir"
tee "$logdir/client-to-agent.jsonl" | "$@" | tee "$logdir/agent-to-client.jsonl"
