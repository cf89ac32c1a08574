package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idempotent-payments/idempay/internal/cost"
	"github.com/idempotent-payments/idempay/internal/deploy"
)

// memorySizes are the sizes BenchmarkMemorySizes measures, in its order.
var memorySizes = []int{128, 256, 512, 1024}

// The bill's assumptions the run cannot measure, stated in the report.
const (
	// coldShare is the share of invocations that start a new execution
	// environment.
	coldShare = 0.01
	// subscriberRequestsPerEvent: the subscriber receives and deletes its
	// events in batches of 10, a receive and a delete per batch.
	subscriberRequestsPerEvent = 2.0 / 10
	// p99Target is the first execution's p99 at half of capacity, locally,
	// that a size of the charge function must meet to be chosen: a
	// checkout waits on it.
	p99Target = 100.0
	// queueP99Target is the queue command's p99 from its send to the end
	// of the invocation that handled it, at half of capacity, locally,
	// that a size of the consumers must meet: a producer waits on an
	// outcome event, not a person on a spinner.
	queueP99Target = 1000.0
	// acquirerWaitMS is a card authorization's round trip to the acquirer,
	// which a first execution waits for and Lambda bills at the function's
	// memory size: the sandbox answers at once, an acquirer in the hundreds
	// of milliseconds. A consumer invocation waits for it once per wave of
	// deploy.ConsumerConcurrency commands of its batch.
	acquirerWaitMS = 300.0
	// idlePollers is how many pollers keep an empty queue's long polls
	// going, an assumption: AWS does not publish it; Lambda starts
	// processing an SQS queue with five concurrent batches.
	idlePollers = 5
)

// sweepsPerMonth is how often the sweeper runs in 30 days.
var sweepsPerMonth = float64(30*24*time.Hour) / float64(deploy.Deployed().SweepInterval)

// sizeBill is one memory size's bill of a million charges by one path,
// and whether that size meets the path's p99 target.
type sizeBill struct {
	memoryMB int
	parts    []cost.Part
	total    float64
	meets    bool
	shaped   bool
}

// sized is the figures of path at size.
func sized(r map[string]metrics, size int, path string) (metrics, bool) {
	m, ok := r[fmt.Sprintf("MemorySizes/%dMB/%s", size, path)]
	return m, ok
}

// billOf is size's bill of a million first executions over HTTP, each
// waiting acquirerWaitMS for the acquirer: its billed duration, cold
// start, publisher and logs in the run, and the write and read units a
// first execution takes (UnitsPerPath).
func billOf(r map[string]metrics, size int) (sizeBill, bool) {
	first, ok := sized(r, size, "first-execution")
	units, unitsOK := r["UnitsPerPath/first-execution"]
	if !ok || !unitsOK {
		return sizeBill{}, false
	}
	return httpBill(r, size, first, units, first["p99_ms"] <= p99Target), true
}

// httpBill is size's bill of a million requests of an HTTP path whose
// figures in the run are m, each waiting acquirerWaitMS for the acquirer,
// with the write and read units of units; meets is whether the path met
// its target.
func httpBill(r map[string]metrics, size int, m, units metrics, meets bool) sizeBill {
	parts := cost.PerMillion(cost.Usage{
		MemoryMB: size, BilledMS: m["billed_ms"] + acquirerWaitMS, Invocations: 1,
		ColdStartMS: coldStartMS(r, size), ColdShare: coldShare,
		APIRequests: 1, WriteUnits: units["WRU/op"], ReadUnits: units["RRU/op"],
		Publishes: 1, EventRequests: subscriberRequestsPerEvent,
		PublisherInvocations: m["publisher_invocations"], PublisherBilledMS: m["publisher_billed_ms"], PublisherMemoryMB: size,
		LogBytes: m["log_bytes"],
	})
	return sizeBill{memoryMB: size, parts: parts, total: cost.Total(parts), meets: meets, shaped: m["shaped"] == 1}
}

// queueBillOf is size's bill of a million charge commands on a queue:
// the consumer's invocations (a command's share of its batch, as the run
// batched them at half of capacity), each billed for the batch and
// acquirerWaitMS per wave of deploy.ConsumerConcurrency commands (of the
// mean batch: an approximation); the command's send and its share of its
// batch's receive and delete; the units of a first execution.
func queueBillOf(r map[string]metrics, size int) (sizeBill, bool) {
	q, ok := sized(r, size, "queue-command")
	units, unitsOK := r["UnitsPerPath/first-execution"]
	perInvocation := q["commands_per_invocation"]
	if !ok || !unitsOK || !(perInvocation > 0) || math.IsInf(perInvocation, 0) {
		return sizeBill{}, false
	}
	waves := math.Ceil(perInvocation / deploy.ConsumerConcurrency)
	parts := cost.PerMillion(cost.Usage{
		MemoryMB: size, BilledMS: q["billed_ms"] + acquirerWaitMS*waves, Invocations: 1 / perInvocation,
		ColdStartMS: coldStartMS(r, size), ColdShare: coldShare,
		WriteUnits: units["WRU/op"], ReadUnits: units["RRU/op"], CommandRequests: 1 + 2/perInvocation,
		Publishes: 1, EventRequests: subscriberRequestsPerEvent,
		PublisherInvocations: q["publisher_invocations"], PublisherBilledMS: q["publisher_billed_ms"], PublisherMemoryMB: size,
		LogBytes: q["log_bytes"],
	})
	return sizeBill{memoryMB: size, parts: parts, total: cost.Total(parts), meets: q["p99_ms"] <= queueP99Target, shaped: q["shaped"] == 1}, true
}

// actionBillOf is size's bill of a million requests of an action path
// over HTTP (refund, capture, void), each waiting acquirerWaitMS for the
// acquirer: the path's billed duration, publisher and logs in the run,
// and the write and read units of units (WRU/op, RRU/op), which unitsOK
// says were measured.
func actionBillOf(r map[string]metrics, size int, path string, units metrics, unitsOK bool) (sizeBill, bool) {
	m, ok := sized(r, size, path)
	if !ok || !unitsOK {
		return sizeBill{}, false
	}
	return httpBill(r, size, m, units, true), true
}

// refundBillOf is size's bill of a million refunds: the refund path's
// figures in the run (its balances holding 1 to 25 entries), and the
// units of a charge's nth refund (RefundUnits measures the first and the
// cap's, where each balance update is billed by the whole item).
func refundBillOf(r map[string]metrics, size, nth int) (sizeBill, bool) {
	units, ok := r[fmt.Sprint(refundUnitsPrefix, nth)]
	return actionBillOf(r, size, "refund", units, ok)
}

const refundUnitsPrefix = "RefundUnits/refund-"

// lastRefund is the largest nth refund RefundUnits measured (its 150th).
func lastRefund(r map[string]metrics) int {
	last := 0
	for name := range r {
		if n, err := strconv.Atoi(strings.TrimPrefix(name, refundUnitsPrefix)); err == nil && strings.HasPrefix(name, refundUnitsPrefix) {
			last = max(last, n)
		}
	}
	return last
}

// captureUnitsName is the benchmark of the units of an authorization's
// actions: for each action it measured, action-WRU/op and action-RRU/op,
// where action is "first" (its first capture), "void" (a void, its only
// action) or the ordinal of the last of its captures and refunds in turn
// ("150th", lastAction).
const captureUnitsName = "CaptureUnits"

// captureUnits are the write and read units captureUnitsName measured of
// action, as WRU/op and RRU/op, and whether it measured both.
func captureUnits(r map[string]metrics, action string) (metrics, bool) {
	m := r[captureUnitsName]
	write, writeOK := m[action+"-WRU/op"]
	read, readOK := m[action+"-RRU/op"]
	return metrics{"WRU/op": write, "RRU/op": read}, writeOK && readOK
}

// captureBillOf is size's bill of a million voids (action "void": the
// void path's figures in the run and a void's units), or of a million
// captures (the capture path's figures in the run) with the units of
// action: "first" or lastAction's.
func captureBillOf(r map[string]metrics, size int, action string) (sizeBill, bool) {
	path := "capture"
	if action == "void" {
		path = "void"
	}
	units, ok := captureUnits(r, action)
	return actionBillOf(r, size, path, units, ok)
}

// lastAction is the ordinal ("150th") of the last action captureUnitsName
// measured on one authorization, "" when it measured none.
func lastAction(r map[string]metrics) string {
	for unit := range r[captureUnitsName] {
		if n, ok := strings.CutSuffix(unit, "th-WRU/op"); ok {
			if _, err := strconv.Atoi(n); err == nil {
				return n + "th"
			}
		}
	}
	return ""
}

// coldStartMS is what a cold invocation at size bills on top of a warm
// one: the charge function's, measured; the consumer's is taken as the
// same.
func coldStartMS(r map[string]metrics, size int) float64 {
	cold, _ := sized(r, size, "cold-start")
	return math.Max(0, math.Ceil(cold["cold_ms"]-cold["warm_ms"]))
}

// publisherPerMillion is what the publisher costs per million events at
// size: its invocations per event and their billed duration in the run's
// first executions.
func publisherPerMillion(r map[string]metrics, size int) (float64, bool) {
	first, ok := sized(r, size, "first-execution")
	if !ok || first["publisher_invocations"] <= 0 {
		return 0, false
	}
	parts := cost.PerMillion(cost.Usage{PublisherInvocations: first["publisher_invocations"], PublisherBilledMS: first["publisher_billed_ms"], PublisherMemoryMB: size})
	return cost.Total(parts), true
}

// sweeperMonthly is what a month of sweeps costs at size, each billed as
// the run's sweeps were.
func sweeperMonthly(r map[string]metrics, size int) (float64, bool) {
	s, ok := sized(r, size, "sweep")
	if !ok {
		return 0, false
	}
	return cost.Total(cost.PerMillion(cost.Usage{MemoryMB: size, BilledMS: s["billed_ms"], Invocations: 1})) * sweepsPerMonth / 1e6, true
}

// roundTrips is the round trips the floor of path made, at whichever
// size the run measured.
func roundTrips(r map[string]metrics, path string) float64 {
	for _, size := range memorySizes {
		if m, ok := sized(r, size, path); ok {
			return m["round_trips"]
		}
	}
	return 0
}

// memorySection is the report's part on memory sizes: latency, capacity
// and billed duration per path and size against the floor, cold starts
// and memory, the bills of a million first executions and of a million
// queue commands by part, at the charge function's size those of a
// million refunds, captures and voids, and each function's size chosen.
func memorySection(r map[string]metrics) string {
	var b strings.Builder
	b.WriteString("\n## Cost and latency by memory size (`BenchmarkMemorySizes`)\n\n")
	fmt.Fprintf(&b, "Each execution environment (the RIE and its bootstrap) in a cgroup of its own with the size's CPU quota (memory ÷ %d MB of a vCPU, per 20 ms CFS period) and memory limit; two charge and two consumer environments. Capacity: 4 closed-loop clients, per environment. Latency: requests sent at a steady rate of half that capacity, each timed from when it was due. Queue commands go through the local event source mapping, one poller, so one consumer environment works at a time; each is timed from its send to the end of the invocation that handled it, and its billed ms are per consumer invocation. A low throttled share means this machine, not the quota, was the limit.\n\n", deploy.MemoryPerVCPU)
	b.WriteString("| size | path | capacity req/s per env | throttled % | p50 ms | p99 ms | billed ms | CPU ms |\n|---|---|---|---|---|---|---|---|\n")
	for _, size := range memorySizes {
		for _, path := range []string{"first-execution", "replay", "storm-of-20", "queue-command", "refund", "capture", "void"} {
			m, ok := sized(r, size, path)
			if !ok {
				continue
			}
			label := fmt.Sprintf("%d MB", size)
			if m["shaped"] != 1 {
				label += " (unshaped)"
			} else if m["throttled_pct"] < 20 {
				label += " (machine-bound)"
			}
			fmt.Fprintf(&b, "| %s | %s | %.1f | %.0f | %.1f | %.1f | %.1f | %.2f |\n", label, path, m["capacity_rps_per_env"], m["throttled_pct"],
				m["p50_ms"], m["p99_ms"], m["billed_ms"], m["cpu_ms"])
		}
	}
	fmt.Fprintf(&b, "\n**Against the floor.** The yardstick function (a handler that makes a first execution's %.0f round trips, or %.0f, as a replay of one key is served from the warm cache, and nothing else) in two environments of the same size, invoked directly: what the charge paths would reach if the bootstrap spent nothing above it. CPU at half of capacity, as the paths'. Ratios are charge ÷ floor for CPU and floor ÷ charge for capacity; 1.2 is the target.\n\n",
		roundTrips(r, "floor-first-execution"), roundTrips(r, "floor-replay"))
	b.WriteString("| size | path | capacity per env | floor's | floor ÷ charge | CPU ms | floor's | charge ÷ floor |\n|---|---|---|---|---|---|---|---|\n")
	for _, size := range memorySizes {
		for _, path := range []string{"first-execution", "replay"} {
			m, ok := sized(r, size, path)
			f, fOK := sized(r, size, "floor-"+path)
			if !ok || !fOK || m["capacity_rps_per_env"] <= 0 || f["cpu_ms"] <= 0 {
				continue
			}
			fmt.Fprintf(&b, "| %d MB | %s | %.1f | %.1f | %.2f | %.2f | %.2f | %.2f |\n", size, path, m["capacity_rps_per_env"], f["capacity_rps_per_env"],
				f["capacity_rps_per_env"]/m["capacity_rps_per_env"], m["cpu_ms"], f["cpu_ms"], m["cpu_ms"]/f["cpu_ms"])
		}
	}
	b.WriteString("\n| size | cold start ms (first invocation) | warm ms | RSS MB after the run | peak RSS MB | invocations per environment | sweep billed ms |\n|---|---|---|---|---|---|---|\n")
	for _, size := range memorySizes {
		c, cOK := sized(r, size, "cold-start")
		m, mOK := sized(r, size, "memory")
		if !cOK || !mOK {
			continue
		}
		sweep := "—"
		if s, ok := sized(r, size, "sweep"); ok {
			sweep = fmt.Sprintf("%.1f", s["billed_ms"])
		}
		fmt.Fprintf(&b, "| %d MB | %.1f | %.1f | %.1f | %.1f | %.0f | %s |\n", size, c["cold_ms"], c["warm_ms"], m["rss_mb"], m["peak_rss_mb"], m["invocations"], sweep)
	}
	if m, ok := r["MemoryAfterInvocations"]; ok && m["shaped"] == 1 {
		fmt.Fprintf(&b, "\nAfter %.0f first executions each, every one of a key of its own (`BenchmarkMemoryAfterInvocations`: the warm cache full; the %.0f MB memory limit, no CPU quota, which changes how long they take, not what the process keeps), the larger RSS of the two charge environments was %.1f MB, their peak %.1f MB.\n",
			m["invocations"], m["memory_mb"], m["rss_mb"], m["peak_rss_mb"])
	}
	var charge, queue []sizeBill
	for _, size := range memorySizes {
		if bill, ok := billOf(r, size); ok {
			charge = append(charge, bill)
		}
		if bill, ok := queueBillOf(r, size); ok {
			queue = append(queue, bill)
		}
	}
	if len(charge) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "\n**A million first executions over HTTP, US$** (`internal/cost`: on-demand list prices in us-east-1; the billed durations, cold starts, publisher invocations and log bytes of this run; the write and read units of `UnitsPerPath`; assumed: an acquirer that answers in %.0f ms, billed as the function's wait, %.0f %% of invocations cold, the subscriber's receive and delete in batches of 10):\n\n", acquirerWaitMS, coldShare*100)
	billTable(&b, sizeHeads(charge), charge)
	if len(queue) > 0 {
		fmt.Fprintf(&b, "\n**A million charge commands on a queue, US$** (the same prices and assumptions; the consumer's batches as this run made them at half of capacity, each billed for the batch and %.0f ms per %d commands of it, as it calls the acquirer for %d at once; each command's send and its share of its batch's receive and delete; the charge function's cold start; every figure of a run whose acquirer answered at once):\n\n", acquirerWaitMS, deploy.ConsumerConcurrency, deploy.ConsumerConcurrency)
		billTable(&b, sizeHeads(queue), queue)
		fmt.Fprintf(&b, "\nApart from these, each command queue costs $%.4f a month while empty: %d pollers' %d-second long polls, each billed as a request (an assumption: AWS does not publish how many pollers keep an idle queue).\n", cost.IdleQueueMonthly(idlePollers), idlePollers, cost.LongPollSeconds)
	}
	if chosen, ok := cheapest(charge); ok {
		last := lastRefund(r)
		first, firstOK := refundBillOf(r, chosen.memoryMB, 1)
		fullest, fullestOK := refundBillOf(r, chosen.memoryMB, last)
		if firstOK && fullestOK {
			fmt.Fprintf(&b, "\n**A million refunds over HTTP at the charge function's size, %d MB, US$** (the same prices and assumptions; the refund path's billed duration in this run; the write and read units of a charge's first refund and of its %dth, `RefundUnits`):\n\n", chosen.memoryMB, last)
			billTable(&b, []string{"a charge's first refund", fmt.Sprintf("its %dth", last)}, []sizeBill{first, fullest})
		}
		nth := lastAction(r)
		capture, captureOK := captureBillOf(r, chosen.memoryMB, "first")
		capturedNth, capturedNthOK := captureBillOf(r, chosen.memoryMB, nth)
		void, voidOK := captureBillOf(r, chosen.memoryMB, "void")
		if captureOK && capturedNthOK && voidOK {
			fmt.Fprintf(&b, "\n**A million captures and a million voids over HTTP at the charge function's size, %d MB, US$** (the same prices and assumptions; the capture and void paths' billed durations in this run; the write and read units of an authorization's first capture, of its %s action, its captures and refunds in turn, and of a void, `CaptureUnits`):\n\n", chosen.memoryMB, nth)
			billTable(&b, []string{"an authorization's first capture", "its " + nth + " action", "a void"}, []sizeBill{capture, capturedNth, void})
		}
	}
	b.WriteString("\n**Each function's size.** Per size: the charge function's total per million first executions, the consumers' (the producers' and the reconcile queue's, one binary) per million commands, the publisher's per million events, the sweeper's a month; a size that misses its p99 target is marked ✗.\n\n")
	b.WriteString("| function | rule |")
	for _, size := range memorySizes {
		fmt.Fprintf(&b, " %d MB |", size)
	}
	b.WriteString(" chosen |\n|---|---|" + strings.Repeat("---|", len(memorySizes)+1) + "\n")
	choice := func(name, rule string, bills []sizeBill) {
		fmt.Fprintf(&b, "| %s | %s |", name, rule)
		for _, size := range memorySizes {
			i := slices.IndexFunc(bills, func(bill sizeBill) bool { return bill.memoryMB == size })
			switch {
			case i < 0:
				b.WriteString(" — |")
			case !bills[i].meets:
				fmt.Fprintf(&b, " %.4f ✗ |", bills[i].total)
			default:
				fmt.Fprintf(&b, " %.4f |", bills[i].total)
			}
		}
		if chosen, ok := cheapest(bills); ok {
			fmt.Fprintf(&b, " **%d MB** |\n", chosen.memoryMB)
		} else {
			b.WriteString(" none |\n")
		}
	}
	choice("charge", fmt.Sprintf("cheapest with a first execution's p99 within %.0f ms", p99Target), charge)
	if len(queue) > 0 {
		choice("consumer, reconciler", fmt.Sprintf("cheapest with a command's p99 within %.0f ms", queueP99Target), queue)
	}
	var publisher, sweeper []sizeBill
	for _, size := range memorySizes {
		if d, ok := publisherPerMillion(r, size); ok {
			publisher = append(publisher, sizeBill{memoryMB: size, total: d, meets: true})
		}
		if d, ok := sweeperMonthly(r, size); ok {
			sweeper = append(sweeper, sizeBill{memoryMB: size, total: d, meets: true})
		}
	}
	if len(publisher) > 0 {
		choice("publisher", "cheapest per event", publisher)
	}
	if len(sweeper) > 0 {
		choice("sweeper", "cheapest a month (each run stops at its deadline and the next goes on)", sweeper)
	}
	if !charge[0].shaped {
		b.WriteString("\nThis run was **unshaped** (no cgroup v1 here, or not root): every figure above is on full cores, not Lambda's share.\n")
	}
	return b.String()
}

// billTable writes bills side by side, by part, with their totals, under
// heads, one a bill.
func billTable(b *strings.Builder, heads []string, bills []sizeBill) {
	b.WriteString("| part |")
	for _, head := range heads {
		fmt.Fprintf(b, " %s |", head)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(bills)) + "\n")
	for i, p := range bills[0].parts {
		fmt.Fprintf(b, "| %s |", p.Name)
		for _, bill := range bills {
			fmt.Fprintf(b, " %.4f |", bill.parts[i].Dollars)
		}
		b.WriteString("\n")
	}
	b.WriteString("| **total** |")
	for _, bill := range bills {
		fmt.Fprintf(b, " **%.4f** |", bill.total)
	}
	b.WriteString("\n")
}

// sizeHeads are the heads of bills of one path by size: their sizes.
func sizeHeads(bills []sizeBill) []string {
	heads := make([]string, len(bills))
	for i, bill := range bills {
		heads[i] = fmt.Sprintf("%d MB", bill.memoryMB)
	}
	return heads
}

// cheapest is the bill with the lowest total among those that meet their
// p99 target.
func cheapest(bills []sizeBill) (sizeBill, bool) {
	var best sizeBill
	found := false
	for _, bill := range bills {
		if bill.meets && (!found || bill.total < best.total) {
			best, found = bill, true
		}
	}
	return best, found
}
