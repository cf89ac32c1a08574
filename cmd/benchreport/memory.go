package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/idempotent-payments/idempay/internal/cost"
)

// memorySizes are the sizes BenchmarkMemorySizes measures, in its order.
var memorySizes = []int{128, 256, 512, 1024}

// The bill's assumptions the run cannot measure, stated in the report.
const (
	// coldShare is the share of the charge function's invocations that
	// start a new execution environment.
	coldShare = 0.01
	// subscriberRequestsPerEvent: the subscriber receives and deletes its
	// events in batches of 10, a receive and a delete per batch.
	subscriberRequestsPerEvent = 2.0 / 10
	// p99Target is the first execution's p99 at half of capacity, locally,
	// that a memory size must meet to be chosen.
	p99Target = 100.0
	// acquirerWaitMS is a card authorization's round trip to the acquirer,
	// which a first execution waits for and Lambda bills at the function's
	// memory size: the sandbox answers at once, an acquirer in the hundreds
	// of milliseconds.
	acquirerWaitMS = 300.0
)

// sizeBill is one memory size's bill of a million first executions over
// HTTP, each waiting acquirerWaitMS for the acquirer, and whether that
// size meets p99Target.
type sizeBill struct {
	memoryMB int
	parts    []cost.Part
	total    float64
	meets    bool
	shaped   bool
}

// billOf is size's bill from the run's figures: its first executions'
// billed duration, cold start, publisher and logs, and the write and read
// units a first execution takes (UnitsPerPath).
func billOf(r map[string]metrics, size int) (sizeBill, bool) {
	path := fmt.Sprintf("MemorySizes/%dMB/first-execution", size)
	first, ok := r[path]
	cold := r[fmt.Sprintf("MemorySizes/%dMB/cold-start", size)]
	units, unitsOK := r["UnitsPerPath/first-execution"]
	if !ok || !unitsOK {
		return sizeBill{}, false
	}
	parts := cost.PerMillion(cost.Usage{
		MemoryMB: size, BilledMS: first["billed_ms"] + acquirerWaitMS, Invocations: 1,
		ColdStartMS: math.Max(0, math.Ceil(cold["cold_ms"]-cold["warm_ms"])), ColdShare: coldShare,
		APIRequests: 1, WriteUnits: units["WRU/op"], ReadUnits: units["RRU/op"],
		Publishes: 1, EventRequests: subscriberRequestsPerEvent,
		PublisherInvocations: first["publisher_invocations"], PublisherBilledMS: first["publisher_billed_ms"], PublisherMemoryMB: size,
		LogBytes: first["log_bytes"],
	})
	return sizeBill{memoryMB: size, parts: parts, total: cost.Total(parts), meets: first["p99_ms"] <= p99Target, shaped: first["shaped"] == 1}, true
}

// memorySection is the report's part on memory sizes: latency, capacity
// and billed duration per path and size, cold starts and memory, and the
// bill of a million first executions by part, with the size chosen.
func memorySection(r map[string]metrics) string {
	var b strings.Builder
	b.WriteString("\n## Cost and latency by memory size (`BenchmarkMemorySizes`)\n\n")
	b.WriteString("Each execution environment (the RIE and its bootstrap) in a cgroup of its own with the size's CPU quota (memory ÷ 1,769 MB of a vCPU, per 20 ms CFS period) and memory limit; two charge environments. Capacity: 4 closed-loop clients, per environment. Latency: requests sent at a steady rate of half that capacity, each timed from when it was due. A low throttled share means this machine, not the quota, was the limit.\n\n")
	b.WriteString("| size | path | capacity req/s per env | throttled % | p50 ms | p99 ms | billed ms | CPU ms |\n|---|---|---|---|---|---|---|---|\n")
	for _, size := range memorySizes {
		for _, path := range []string{"first-execution", "replay", "storm-of-20"} {
			m, ok := r[fmt.Sprintf("MemorySizes/%dMB/%s", size, path)]
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
	b.WriteString("\n| size | cold start ms (first invocation) | warm ms | RSS MB after the run | peak RSS MB | invocations per environment |\n|---|---|---|---|---|---|\n")
	for _, size := range memorySizes {
		c, m := r[fmt.Sprintf("MemorySizes/%dMB/cold-start", size)], r[fmt.Sprintf("MemorySizes/%dMB/memory", size)]
		if c == nil || m == nil {
			continue
		}
		fmt.Fprintf(&b, "| %d MB | %.1f | %.1f | %.1f | %.1f | %.0f |\n", size, c["cold_ms"], c["warm_ms"], m["rss_mb"], m["peak_rss_mb"], m["invocations"])
	}
	var bills []sizeBill
	for _, size := range memorySizes {
		if bill, ok := billOf(r, size); ok {
			bills = append(bills, bill)
		}
	}
	if len(bills) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "\n**A million first executions over HTTP, US$** (`internal/cost`: on-demand list prices in us-east-1; the billed durations, cold starts, publisher invocations and log bytes of this run; the write and read units of `UnitsPerPath`; assumed: an acquirer that answers in %.0f ms, billed as the function's wait, %.0f %% of invocations cold, the subscriber's receive and delete in batches of 10):\n\n", acquirerWaitMS, coldShare*100)
	b.WriteString("| part |")
	for _, bill := range bills {
		fmt.Fprintf(&b, " %d MB |", bill.memoryMB)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(bills)) + "\n")
	for i, p := range bills[0].parts {
		fmt.Fprintf(&b, "| %s |", p.Name)
		for _, bill := range bills {
			fmt.Fprintf(&b, " %.4f |", bill.parts[i].Dollars)
		}
		b.WriteString("\n")
	}
	b.WriteString("| **total** |")
	for _, bill := range bills {
		fmt.Fprintf(&b, " **%.4f** |", bill.total)
	}
	b.WriteString("\n")
	if chosen, ok := cheapest(bills); ok {
		fmt.Fprintf(&b, "\nThe cheapest size whose first executions' p99 at half of capacity is within %.0f ms: **%d MB**, $%.4f per million.\n", p99Target, chosen.memoryMB, chosen.total)
	} else {
		fmt.Fprintf(&b, "\nNo size's first executions met a p99 of %.0f ms at half of capacity.\n", p99Target)
	}
	if !bills[0].shaped {
		b.WriteString("\nThis run was **unshaped** (no cgroup v1 here, or not root): every figure above is on full cores, not Lambda's share.\n")
	}
	return b.String()
}

// cheapest is the bill with the lowest total among those that meet the
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
