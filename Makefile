# wheeltimer: the commands a newcomer runs. Everything they need is fetched
# through the Go module proxy; nothing has to be installed by hand.

GO            ?= go
STATICCHECK   := $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
MODULES       := . benchmarks examples/delayedorder examples/cron exporters/prometheus exporters/otel scripts/modproxy
FUZZTIME      ?= 30s
SOAK_DURATION ?= 3m
# benchstat has no tagged release: the pseudo-version pins the one used.
BENCHSTAT     := $(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
BENCH_OUT     ?= bench-core.out

.PHONY: all test check lint unit unit-gomaxprocs bench bench-core bench-quick cover demo fuzz fuzz-quick soak soak-quick install-check

all: test

## test: everything CI runs, about 6 minutes on 2 cores: vet, staticcheck,
## race tests of every module, the timer's -short tests again at another
## GOMAXPROCS, short fuzzing, a short soak, the quick benchmark matrix,
## the install of the library and its exporters as a module user does, and
## the recount of the trips docs/design.md lists.
test: lint unit unit-gomaxprocs fuzz-quick soak-quick bench-quick install-check trips

## check: the quick loop for day-to-day work, about a minute on 2 cores
## (several the first time, as the modules download and build): vet and
## staticcheck of every module, then the root module's race tests with
## -short, under which each test that takes a second or more under -race
## runs fewer rounds, or is skipped where a smaller run could not fail
## (testing.Short() in the test). make test runs them all in full.
check: lint
	$(GO) test -race -short -count=1 ./...

lint:
	@for m in $(MODULES); do \
		[ -f $$m/go.mod ] || continue; \
		echo "== vet + staticcheck: $$m"; \
		(cd $$m && $(GO) vet ./... && $(STATICCHECK) ./...) || exit 1; \
	done

## unit: the race tests of every module. The root module's run in one lane
## and the other modules' in a second beside it, as the root's spend much of
## their time waiting on clocks; each lane's output is printed whole when it
## ends. Then the timer's model tests again with the wheeltimer_verify
## build tag, under which the worker checks the wheel's invariants after
## each step (-short: a few seconds).
unit:
	@dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	lane() { for m in "$$@"; do \
		[ -f $$m/go.mod ] || continue; \
		echo "== go test -race: $$m"; \
		(cd $$m && $(GO) test -race -count=1 -timeout 10m ./...) || return 1; \
	done; }; \
	lane . > "$$dir/root" 2>&1 & root=$$!; \
	lane $(filter-out .,$(MODULES)) > "$$dir/others" 2>&1; others=$$?; \
	wait $$root; rootrc=$$?; \
	cat "$$dir/root" "$$dir/others"; \
	[ $$rootrc = 0 ] && [ $$others = 0 ]
	@echo "== go test -race -tags wheeltimer_verify -short -run 'Model|Fuzz|Verify' ./hashedwheel"
	@$(GO) test -race -tags wheeltimer_verify -short -count=1 -run 'Model|Fuzz|Verify' ./hashedwheel

## unit-gomaxprocs: the timer's tests at a GOMAXPROCS unlike the machine's,
## so that no test depends on the number of cores; -short, as unit has just
## run them all in full.
unit-gomaxprocs:
	@procs=8; [ "$$(nproc)" = 8 ] && procs=3; \
	echo "== go test -race -short ./hashedwheel at GOMAXPROCS=$$procs"; \
	GOMAXPROCS=$$procs $(GO) test -race -short -count=1 -timeout 10m ./hashedwheel

## bench: the core's Go benchmarks beside time.AfterFunc, then the whole
## comparison matrix, which rewrites docs/benchmarks.md and the charts.
bench: bench-core
	cd benchmarks && $(GO) run ./cmd/report -out ../docs

## bench-core: the core's Go benchmarks; ratios to time.AfterFunc from the same run.
## The raw output goes to $(BENCH_OUT), then benchstat summarises it: each
## figure's median over the runs with its confidence interval (six runs of
## the per-operation benchmarks; each storm figure is already the median,
## and the worst, of five storms, and each million scheduled the median of
## five). The shard figures run at GOMAXPROCS=16: they are a property of
## the shard choice, whatever the cores.
bench-core:
	@rm -f $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'NewTimeoutCancel|ResetLater|WithTimeoutCancel$$|WithTimeoutCancelParallel$$|MiddlewareChain|WithTimeoutChild|ShardChoice|NewTimerStop|NewTickerStop|ChanTimerReset|HTTPClientChain' -benchmem -count 6 ./hashedwheel | tee -a $(BENCH_OUT)
	GOMAXPROCS=16 $(GO) test -run '^$$' -bench 'ShardsSharedAtOnce' -benchtime 20x -count 1 ./hashedwheel | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'ExpiryStorm$$|AfterFuncStorm|SlowTasks|Memory' -benchtime 5x -count 1 ./hashedwheel | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'ScheduleMillion' -benchtime 5x -count 1 ./hashedwheel | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'Idle' -benchtime 1x -count 1 ./hashedwheel | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./mpsc | tee -a $(BENCH_OUT)
	@! grep -E '^(FAIL|--- FAIL|panic:)' $(BENCH_OUT)
	$(BENCHSTAT) $(BENCH_OUT)

## bench-quick: a reduced matrix in under a minute, a smoke run of the
## harness: its report goes to a scratch directory that is removed
## afterwards, and its progress is printed only if it fails.
bench-quick:
	@echo "== bench-quick: the reduced benchmark matrix"
	@dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	if ! (cd benchmarks && $(GO) run ./cmd/report -quick -out "$$dir") > "$$dir/log" 2>&1; then \
		cat "$$dir/log"; exit 1; \
	fi; \
	tail -n 1 "$$dir/log" | sed 's/: wrote .*//'

## install-check: in throwaway modules outside the repository, go get the
## library and each exporter alone from a module proxy holding the working
## tree at the newest version of CHANGELOG.md, then build and run a
## program using it; first, check that no go.mod has a replace and that
## every module requires that version (scripts/install-check.sh).
install-check:
	bash scripts/install-check.sh

## trips: the functions one timeout's trip, a pass of the worker with
## nothing to do and one Cancel beyond it run, recounted with a coverage
## build of scripts/trip and checked against the lists in docs/design.md
## (scripts/trips.sh); a few seconds.
.PHONY: trips
trips:
	bash scripts/trips.sh

## cover: unit tests with a coverage report in coverage.html.
cover:
	$(GO) test -race -coverprofile=coverage.out ./...
	$(GO) tool cover -func=coverage.out | tail -1
	$(GO) tool cover -html=coverage.out -o coverage.html

## demo: schedule + cancel and a request context beside the runtime's, median
## of five alternating rounds; then 1M timeouts, mostly cancelled, the rest
## fired, beside time.AfterFunc: memory per pending timeout and lateness.
demo:
	$(GO) run ./examples/demo

## fuzz: every fuzz target for FUZZTIME each (make fuzz FUZZTIME=5m), built
## with the wheeltimer_verify tag (scripts/fuzz.sh), as fuzz-quick and the
## soaks are: the worker checks the wheel's invariants after each step.
fuzz:
	bash scripts/fuzz.sh $(FUZZTIME)

fuzz-quick:
	bash scripts/fuzz.sh 3s

## soak: producers on every core for SOAK_DURATION; prints the balance.
soak:
	$(GO) test -tags wheeltimer_verify -run '^TestSoak$$' -count=1 -timeout 0 -v ./hashedwheel -soak=$(SOAK_DURATION)

soak-quick:
	$(GO) test -race -tags wheeltimer_verify -run '^TestSoak$$' -count=1 -v ./hashedwheel -soak=10s
