# The commands of the README and docs/. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

EMULATORS := localstack/emulators.sh
# Every target that talks to AWS APIs gets the emulators' endpoints through
# the SDK's standard variables; nothing in the code names an endpoint.
WITH_EMULATORS = $(EMULATORS) up && eval "$$($(EMULATORS) env)" &&

GO_TEST_FLAGS ?= -race -count=1 -timeout 30m
# The functions built for AWS: deploy's binaries (localapi.Functions), again,
# since make cannot read Go (TestFunctionsAreTheMakefiles holds them equal).
FUNCTIONS := charge sqsconsumer sweeper publisher operator match
# The Lambda Runtime Interface Emulator, built from source through the Go proxy.
RIE := bin/aws-lambda-rie
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
export AWS_LAMBDA_RIE := $(CURDIR)/$(RIE)
# A count of executions, not a duration: with -fuzztime=10s, Go 1.26's fuzz
# coordinator can race its own deadline on a loaded machine and fail a
# target with a bare "context deadline exceeded" and no crasher
# (golang/go#75804, fixed in 1.27). 100,000 executions take 2–20 s here.
FUZZTIME ?= 100000x
# Go minimizes every new interesting input for up to 60 s by default, during
# which nothing is fuzzed: with 10 s per fuzzer that was most of the time.
FUZZMINIMIZE ?= 2s

.PHONY: test fast lint chaos model spin fuzz bench bench-cpu up down run build send-charge synth deploy destroy localstack-up localstack-down run-localstack test-localstack

# The CDK app runs its constructs in node through jsii.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := true
CDK := infra/_cdk/node_modules/.bin/cdk
ENV ?= dev

## test: the checks (make lint), then start the emulators (installing them on first use), run every test, the infra tests and a short run of every fuzzer
test: $(RIE) spin lint
	$(WITH_EMULATORS) go test $(GO_TEST_FLAGS) -skip '^TestChaos' ./...
	go vet -tags tracing ./internal/setup && go test -tags tracing -count=1 -run '^TestOTLPExport$$' ./internal/setup
	cd infra && go test -count=1 -timeout 20m ./...
	cd cmd/benchreport && go test -count=1 ./...
	$(WITH_EMULATORS) go test -count=1 -timeout 10m -run '^TestChaos' -v ./internal/chaos | grep -vE '^(START|END|REPORT) RequestId|^\{"time"|failed to get the next invoke'
	model/check.sh
	$(MAKE) fuzz

## fast: the packages that need neither DynamoDB Local nor the SQS emulator, in seconds (memory stores, the sandbox in process, the RIE)
FAST_PACKAGES := ./internal/idem/ ./internal/idem/idemtest/ ./internal/charge/ ./internal/charge/chargetest/ ./internal/refund/ ./internal/refund/refundtest/ ./internal/capture/ \
	./internal/httpapi/ ./internal/strictjson/ ./internal/command/ ./internal/event/ ./internal/outbox/ ./internal/backstop/ ./internal/tabledef/ \
	./internal/acquirer/ ./internal/acquirer/acquirerhttp/ ./internal/sandbox/ ./internal/obs/ ./internal/setup/ ./internal/charging/ ./internal/localapi/ ./internal/archtest/ ./internal/deploy/ \
	./functions/charge/ ./internal/scheduled/ ./internal/operator/ ./internal/consumer/ ./internal/op/ ./internal/operations/ ./internal/matrix/ ./internal/storetest/ ./cmd/localapi/
fast: $(RIE)
	@out=$$(gofmt -l $(FAST_PACKAGES)); test -z "$$out" || { echo "gofmt -l (run gofmt -w):"; echo "$$out"; exit 1; }
	go vet $(FAST_PACKAGES)
	go test -count=1 -skip '^TestLint' $(FAST_PACKAGES)
	cd cmd/benchreport && go test -count=1 ./...

## lint: in every module (LINT_MODULES), gofmt -l prints nothing, go vet and staticcheck (pinned; staticcheck.conf) find nothing, go mod tidy changes nothing, and dupl (pinned) finds no duplicate of 10+ lines that the module's .twins does not accept (lint/twins.sh)
# The three modules: the service, the CDK app, the bench report's.
LINT_MODULES ?= . infra cmd/benchreport
STATICCHECK := bin/staticcheck
STATICCHECK_VERSION := v0.8.2
DUPL := bin/dupl
DUPL_VERSION := v1.1.0
lint: $(STATICCHECK) $(DUPL)
	@for m in $(LINT_MODULES); do \
	  echo "lint $$m"; \
	  files=$$(cd "$$m" && go list -f '{{$$d := .Dir}}{{range .GoFiles}}{{$$d}}/{{.}} {{end}}{{range .TestGoFiles}}{{$$d}}/{{.}} {{end}}{{range .XTestGoFiles}}{{$$d}}/{{.}} {{end}}{{range .IgnoredGoFiles}}{{$$d}}/{{.}} {{end}}' ./...); \
	  out=$$(gofmt -l $$files); test -z "$$out" || { echo "gofmt -l (run gofmt -w):"; echo "$$out"; exit 1; }; \
	  (cd "$$m" && go vet ./... && "$(CURDIR)/$(STATICCHECK)" ./... && go mod tidy -diff) || exit 1; \
	  "$(CURDIR)/lint/twins.sh" "$(CURDIR)/$(DUPL)" "$$m" || exit 1; \
	done

$(STATICCHECK):
	GOBIN=$(CURDIR)/bin go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(DUPL):
	GOBIN=$(CURDIR)/bin go install github.com/mibk/dupl@$(DUPL_VERSION)

## chaos: the chaos run (ARGS="-intents 5000 -seed 3" to change it); exits 1 on any violation
chaos: $(RIE)
	$(WITH_EMULATORS) go run ./cmd/chaos $(ARGS)

## model: check the protocol models with spin (DESIGN §4, §7, §8), and that dropping any rule breaks them
model: spin
	model/check.sh

# spin (Debian's package) for the model; gcc compiles its verifier.
spin:
	@command -v spin >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq spin >/dev/null; }

## fuzz: run each fuzz target for FUZZTIME
fuzz:
	@go list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do \
	  for fn in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | cut -d' ' -f2); do \
	    echo "fuzz $$pkg $$fn ($(FUZZTIME))"; \
	    go test -run='^$$' -fuzz="^$$fn$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINIMIZE) $$pkg; \
	  done; \
	done

## bench: every benchmark in one run, then results/report.md and results/latency.png, then bench-cpu (its one gate)
# On emulators started afresh (DynamoDB Local keeps every stream record it
# ever wrote, and a write to a table with a stream slows as they pile up:
# 1.1 ms a put fresh, 3 ms after 10,000), one package at a time, so no
# benchmark shares the machine with another.
bench: $(RIE)
	mkdir -p results && rm -f results/latency-*.txt
	$(EMULATORS) down && $(WITH_EMULATORS) BENCH_RESULTS=$(CURDIR)/results go test -p 1 -run='^$$' -bench=. -benchmem -count=1 -timeout 30m ./... | tee results/bench.txt
	cd cmd/benchreport && go run . $(CURDIR)/results/bench.txt $(CURDIR)/results
	$(MAKE) bench-cpu

## bench-cpu: the charge function's CPU over its SDK floor, the median of 6 runs; fails above cpuratio.MaxFirstExecutionRatio on first executions
# Each run is a process of its own, each path over BENCH_CPU_ITERATIONS
# iterations of its requests; within an iteration the function and its SDK
# floor take turns, in blocks (cpuRounds of cpuBlock requests each, in
# internal/systemtest/cpu_test.go), so that the two are measured over the
# same stretch of the machine's time.
BENCH_CPU_RUNS ?= 6
BENCH_CPU_ITERATIONS ?= 2
bench-cpu: $(RIE)
	mkdir -p results && go test -c -o results/systemtest.test ./internal/systemtest
	$(EMULATORS) down && $(WITH_EMULATORS) cd internal/systemtest && for i in $$(seq $(BENCH_CPU_RUNS)); do \
	  ../../results/systemtest.test -test.run='^$$' -test.bench='^BenchmarkFunctionCPU$$' -test.benchtime=$(BENCH_CPU_ITERATIONS)x || exit 1; \
	done | tee $(CURDIR)/results/cpu.txt
	cd cmd/benchreport && go run ./cpuratio $(CURDIR)/results/cpu.txt | tee $(CURDIR)/results/cpu-ratio.md

## up / down: start / stop the docker-free emulators
up:
	$(EMULATORS) up
down:
	$(EMULATORS) down

## run: the local API on 127.0.0.1:8080 (prints a ready-to-paste curl); Ctrl-C stops it
run: $(RIE)
	$(WITH_EMULATORS) go run ./cmd/localapi

## send-charge: put a charge command on a producer's queue of a running `make run`, print the outcome event its outcome queue receives and the lookup by key
send-charge:
	eval "$$($(EMULATORS) env)" && go run ./cmd/sendcharge

## localstack-up / localstack-down: LocalStack in Docker (localstack/docker-compose.yml pins a release that needs no auth token)
LOCALSTACK_ENV = export AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_REGION=$${AWS_REGION:-us-east-1} \
	AWS_ACCESS_KEY_ID=$${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=$${AWS_SECRET_ACCESS_KEY:-test} &&
localstack-up:
	docker compose -f localstack/docker-compose.yml up -d --wait
localstack-down:
	docker compose -f localstack/docker-compose.yml down

## run-localstack / test-localstack: make run and the Go tests against LocalStack instead of the emulators
run-localstack: $(RIE)
	$(LOCALSTACK_ENV) go run ./cmd/localapi
test-localstack: $(RIE)
	$(LOCALSTACK_ENV) go test $(GO_TEST_FLAGS) ./...

## build: the Lambda bootstraps for AWS (linux/arm64) into dist/<function>/bootstrap; TRACING=1 links the OTLP exporter
build:
	@for fn in $(FUNCTIONS); do \
	  GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags "lambda.norpc $(if $(filter 1,$(TRACING)),tracing)" -trimpath -ldflags='-s -w' -o dist/$$fn/bootstrap ./functions/$$fn; \
	  echo "dist/$$fn/bootstrap"; \
	done

# The deployer's inputs (infra/config.go): the IdP whose RS256 tokens the
# JWT authorizer verifies and their audience, in every environment; where
# the stack goes (AWS_ACCOUNT, AWS_REGION: the cdk CLI's defaults from the
# shell's credentials when empty); who may assume each producer's role
# (PRODUCER_PRINCIPALS="orders=arn:aws:iam::...:role/orders ...", required in
# staging and prod); with TRACING=1 outside CDK's table of regions, the
# collector layer's ARN.
JWT_ISSUER ?=
JWT_AUDIENCE ?=
AWS_ACCOUNT ?=
PRODUCER_PRINCIPALS ?=
# Who may assume the operator's role, the one caller of the operator's
# channel (OPERATOR_PRINCIPAL=arn:aws:iam::...:role/..., required in staging
# and prod).
OPERATOR_PRINCIPAL ?=
COLLECTOR_LAYER_ARN ?=
# Multi-region (ENV=global): REGIONS (the first creates the table), WITNESS_REGION
# with two, TABLE_CONSISTENCY (strong; eventual is refused), the domain and its zone.
REGIONS ?=
WITNESS_REGION ?=
TABLE_CONSISTENCY ?=
DOMAIN_NAME ?=
HOSTED_ZONE_ID ?=
HOSTED_ZONE_NAME ?=
CDK_INPUTS = -c env=$(ENV) -c jwtIssuer=$(JWT_ISSUER) -c jwtAudience=$(JWT_AUDIENCE) \
  -c "alarmEmails=$(ALARM_EMAILS)" -c reservedConcurrency=$(RESERVED_CONCURRENCY) \
  -c throttleRate=$(THROTTLE_RATE) -c throttleBurst=$(THROTTLE_BURST) -c tracing=$(if $(filter 1,$(TRACING)),1) \
  $(if $(AWS_ACCOUNT),-c account=$(AWS_ACCOUNT)) $(if $(AWS_REGION),-c region=$(AWS_REGION)) \
  $(foreach p,$(PRODUCER_PRINCIPALS),-c producerPrincipal.$(p)) $(if $(OPERATOR_PRINCIPAL),-c operatorPrincipal=$(OPERATOR_PRINCIPAL)) $(if $(COLLECTOR_LAYER_ARN),-c collectorLayerArn=$(COLLECTOR_LAYER_ARN)) \
  $(if $(REGIONS),-c regions=$(REGIONS)) $(if $(WITNESS_REGION),-c witnessRegion=$(WITNESS_REGION)) \
  $(if $(TABLE_CONSISTENCY),-c tableConsistency=$(TABLE_CONSISTENCY)) $(if $(DOMAIN_NAME),-c domainName=$(DOMAIN_NAME)) \
  $(if $(HOSTED_ZONE_ID),-c hostedZoneId=$(HOSTED_ZONE_ID)) $(if $(HOSTED_ZONE_NAME),-c hostedZoneName=$(HOSTED_ZONE_NAME))

## synth: the CloudFormation template of ENV (dev, staging, prod) into infra/cdk.out; JWT_ISSUER, JWT_AUDIENCE and (without credentials) AWS_ACCOUNT and AWS_REGION are required, and in staging and prod ALARM_EMAILS, RESERVED_CONCURRENCY, THROTTLE_RATE, THROTTLE_BURST, PRODUCER_PRINCIPALS, OPERATOR_PRINCIPAL
synth: build $(CDK)
	cd infra && _cdk/node_modules/.bin/cdk synth $(CDK_INPUTS) --quiet && ls cdk.out/idempay-$(ENV)*.template.json | sed 's|^|infra/|'

## deploy: build and deploy ENV with the AWS credentials of this shell (cdk bootstrap once per account and region first)
deploy: build $(CDK)
	cd infra && _cdk/node_modules/.bin/cdk deploy --all $(CDK_INPUTS) --require-approval broadening

## destroy: delete ENV's stack (prod keeps its table, queues, secret and logs)
destroy: $(CDK)
	cd infra && _cdk/node_modules/.bin/cdk destroy --all $(CDK_INPUTS)

$(CDK): infra/_cdk/package-lock.json
	cd infra/_cdk && npm ci --no-audit --no-fund --loglevel=error

$(RIE):
	GOBIN=$(CURDIR)/bin go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)
