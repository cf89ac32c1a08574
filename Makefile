# The README's commands. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

EMULATORS := localstack/emulators.sh
# Every target that talks to AWS APIs gets the emulators' endpoints through
# the SDK's standard variables; nothing in the code names an endpoint.
WITH_EMULATORS = $(EMULATORS) up && eval "$$($(EMULATORS) env)" &&

GO_TEST_FLAGS ?= -race -count=1 -timeout 30m
FUZZTIME ?= 10s

.PHONY: test unit fuzz bench up down run

## test: start the emulators (installing them on first use), run every test and a short run of every fuzzer
test:
	$(WITH_EMULATORS) go vet ./... && go test $(GO_TEST_FLAGS) ./...
	$(MAKE) fuzz

## fuzz: run each fuzz target for FUZZTIME
fuzz:
	@go list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do \
	  for fn in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | cut -d' ' -f2); do \
	    echo "fuzz $$pkg $$fn ($(FUZZTIME))"; \
	    go test -run='^$$' -fuzz="^$$fn$$" -fuzztime=$(FUZZTIME) $$pkg; \
	  done; \
	done

## bench: benchmarks (figures, not pass/fail)
bench:
	$(WITH_EMULATORS) go test -run='^$$' -bench=. -benchmem -count=1 ./...

## up / down: start / stop the docker-free emulators
up:
	$(EMULATORS) up
down:
	$(EMULATORS) down

## run: the local API (arrives with the charge function)
run:
	@echo "make run: not yet — the charge API arrives with issue 3. 'make up' starts the emulators."
