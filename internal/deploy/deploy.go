// Package deploy describes the system once: its functions and what
// triggers each, its queues with the times derived from the protocol's,
// and the protocol's times themselves. The CDK app builds the deployment
// from Deployed and the local stack from Local, which differs from it only
// by named overrides, each with its reason. It imports nothing, so the
// CDK app, the local stack and the operator's tool can all read it.
package deploy

import (
	"fmt"
	"slices"
	"time"
)

// A Trigger is what invokes a function.
type Trigger string

// The triggers.
const (
	TriggerAPI            Trigger = "the HTTP API's routes"
	TriggerProducerQueues Trigger = "each producer's charge-commands queue"
	TriggerReconcileQueue Trigger = "the reconcile-commands queue"
	TriggerSchedule       Trigger = "a schedule"
	TriggerStream         Trigger = "the table's stream"
	TriggerOperatorURL    Trigger = "the operator's channel: a function URL with AWS_IAM auth, which only the operator's role may call"
	TriggerDaily          Trigger = "a daily schedule"
)

// MemoryPerVCPU is the memory size at which Lambda gives a function one
// full vCPU; below and above it, CPU is in proportion to memory (AWS Lambda
// Developer Guide, "Configure Lambda function memory").
const MemoryPerVCPU = 1769

// MinMemoryMB and MaxMemoryMB bound a function's memory size (the same
// guide).
const (
	MinMemoryMB = 128
	MaxMemoryMB = 10240
)

// ValidMemory reports whether memoryMB is a memory size Lambda takes.
func ValidMemory(memoryMB int) bool { return memoryMB >= MinMemoryMB && memoryMB <= MaxMemoryMB }

// CPUShare is the share of one vCPU a function of memoryMB gets.
func CPUShare(memoryMB int) float64 { return float64(memoryMB) / MemoryPerVCPU }

// A Function is one Lambda function of the system.
type Function struct {
	// Name names the function: its alarms in AWS, its process locally.
	Name string
	// Binary is the package under functions/ it is built from: the
	// consumer and the reconciler are one binary, deployed twice.
	Binary  string
	Timeout time.Duration
	Trigger Trigger
	// MemoryMB is its memory size, which sets its CPU too (CPUShare): the
	// CDK app deploys it, and the local stack shapes its execution
	// environments by it.
	MemoryMB int
}

// Protocol is the protocol's times (docs/design.md §4): the defaults every
// environment deploys, and those an operator's tool uses for a record that
// carries none. The engine's and the charge service's compiled defaults
// are the same values (TestProtocolIsTheCodes).
type Protocol struct {
	// InTransitBound is T: the longest the acquirer may take to act on a
	// request it received.
	InTransitBound time.Duration
	// ClockSkew is the margin for clocks that disagree.
	ClockSkew time.Duration
	// AcquirerTimeout bounds one acquirer call; it is below T.
	AcquirerTimeout time.Duration
	// LeaseMargin is added to an invocation's deadline to make its lease.
	LeaseMargin time.Duration
	// Retention is how long a key is remembered.
	Retention time.Duration
}

// Redrive: how many receives a command gets before its queue moves it to
// the dead-letter queue (docs/queues.md, "Redrive"). A command that finds
// its key in flight is hidden until that lease has ended plus T + skew, so
// each lease it meets costs one receive, however long the lease: the
// owner's, then, if the sweeper's reconciliation got there first, the
// reconciler's. A refund command may also find its charge's record in
// flight (its row written, its completion not yet: the window a crash
// leaves), hidden the same way, for two leases more. The receive after
// those executes or replays. What is left is for real transient failures,
// each retried after the queue's visibility timeout.
const (
	InFlightReceives  = 2 // the owner's lease, then one reconcile cycle
	ChargeReceives    = 2 // a refund's charge in flight: the same, for the charge's record
	ResolveReceives   = 1 // the receive that executes or replays
	TransientReceives = 3
	MaxReceiveCount   = InFlightReceives + ChargeReceives + ResolveReceives + TransientReceives
)

// Queues is how the command queues and their triggers behave.
type Queues struct {
	// Visibility is every command queue's visibility timeout: a transient
	// failure is retried after it.
	Visibility time.Duration
	// MaxReceives is how many receives a command gets before the
	// dead-letter queue.
	MaxReceives int
	// BatchSize is the most commands one consumer invocation takes.
	BatchSize int
}

// An Override is one way a description differs from Deployed, and why.
type Override struct {
	What, Why string
}

// A Description is the system as one place runs it.
type Description struct {
	Functions []Function
	Queues    Queues
	// StreamBatchSize is the most stream records one publisher invocation
	// takes.
	StreamBatchSize int
	// SweepInterval is how often the sweeper runs.
	SweepInterval time.Duration
	// PurgeWindow is how far back each sweeper run purges expired records
	// where the table has no TTL (TableMode.TTL): a few hours, so a run
	// lists the buckets of the four hours the window touches, 4 ×
	// idem.Shards Queries (one each when empty), and a sweeper stopped for
	// less than that leaves nothing behind; after a longer stop, one run
	// with a wider window (PURGE_WINDOW) catches up.
	PurgeWindow time.Duration
	// StaleRegion is, in the multi-region mode, how old a region's last
	// heartbeat (written by its sweeper every run) is when that region has
	// stopped, and how long a ledger row waits before a region other than
	// its writer publishes its event (backstop.Publisher): three sweeps, so
	// one late or failed run is not a stop.
	StaleRegion time.Duration
	Protocol    Protocol
	// Match is when the daily match runs.
	Match Match
	// Table is how the table is replicated; it decides TTL and which
	// resources are global (TableMode.Scopes).
	Table TableMode
	// Overrides say how the description differs from Deployed; Deployed
	// has none.
	Overrides []Override
}

// Match is when the daily match (conciliação) runs: daily at At after
// midnight UTC, an environment's setting (the CDK app's Config may move
// it), matching the days before; or, locally, every Every, the current day
// so far too (Today). Grace is how long it waits before it pairs a line:
// a row is written after its movement, and a movement near midnight may
// fall on the next day.
type Match struct {
	At, Grace, Every time.Duration
	Today            bool
}

// MatchLookback is how many days a run of the match takes, the day before
// first: a day a failed run left undone is matched by the next, and a day
// done is skipped at the cost of one refused write.
const MatchLookback = 3

// The functions' names.
const (
	FunctionCharge     = "charge"
	FunctionConsumer   = "consumer"
	FunctionReconciler = "reconciler"
	FunctionSweeper    = "sweeper"
	FunctionPublisher  = "publisher"
	FunctionOperator   = "operator"
	FunctionMatch      = "match"
)

// DefaultAccountClaim is the JWT claim that names the account, unless an
// environment names another (ACCOUNT_CLAIM).
const DefaultAccountClaim = "sub"

// consumerTimeout is the consumers' timeout in AWS: a batch of ten
// commands, each at most a few acquirer calls.
const consumerTimeout = 30 * time.Second

// ConsumerConcurrency is how many commands of a batch a consumer
// invocation handles at once.
const ConsumerConcurrency = 5

// Deployed is the system as the CDK app deploys it, in every environment.
// Each function's memory size is the one `make bench` chose by its rule
// (docs/measurements.md, "Memory sizes").
func Deployed() Description {
	return Description{
		Functions: []Function{
			{Name: FunctionCharge, Binary: "charge", Timeout: 10 * time.Second, Trigger: TriggerAPI, MemoryMB: 256},
			{Name: FunctionConsumer, Binary: "sqsconsumer", Timeout: consumerTimeout, Trigger: TriggerProducerQueues, MemoryMB: 128},
			{Name: FunctionReconciler, Binary: "sqsconsumer", Timeout: consumerTimeout, Trigger: TriggerReconcileQueue, MemoryMB: 128},
			// Inside its 1-minute schedule, so two sweeps never overlap.
			{Name: FunctionSweeper, Binary: "sweeper", Timeout: 55 * time.Second, Trigger: TriggerSchedule, MemoryMB: 512},
			// A batch of 100 stream records, each one publish.
			{Name: FunctionPublisher, Binary: "publisher", Timeout: 30 * time.Second, Trigger: TriggerStream, MemoryMB: 512},
			// As long as a consumer's invocation, so the lease an operator's
			// reconciliation takes is no longer than the reconciler's (the
			// redrive arithmetic counts on that). Invoked a few times a day
			// by a person: the smallest size, not make bench's rule.
			{Name: FunctionOperator, Binary: "operator", Timeout: consumerTimeout, Trigger: TriggerOperatorURL, MemoryMB: 128},
			// Once a day, reading a whole day (docs/measurements.md, "The
			// daily match"): Lambda's longest timeout, and memory for a
			// day's movements held while their rows are read.
			{Name: FunctionMatch, Binary: "match", Timeout: 15 * time.Minute, Trigger: TriggerDaily, MemoryMB: 1024},
		},
		// AWS requires an SQS event source's visibility timeout to be at
		// least 6 × its function's timeout.
		Queues:          Queues{Visibility: 6 * consumerTimeout, MaxReceives: MaxReceiveCount, BatchSize: 10},
		StreamBatchSize: 100,
		SweepInterval:   time.Minute,
		PurgeWindow:     3 * time.Hour,
		StaleRegion:     3 * time.Minute,
		Table:           SingleRegion,
		Match:           Match{At: 2 * time.Hour, Grace: 30 * time.Minute},
		Protocol: Protocol{
			InTransitBound: 5 * time.Second, ClockSkew: time.Second, AcquirerTimeout: 3 * time.Second,
			LeaseMargin: 10 * time.Second, Retention: 90 * 24 * time.Hour,
		},
	}
}

// localTimeout is every function's timeout in the local stack.
const localTimeout = 10 * time.Second

// Local is the system as `make run` and the system tests run it: Deployed
// with the overrides it lists.
func Local() Description {
	d := Deployed()
	for i := range d.Functions {
		d.Functions[i].Timeout = localTimeout
	}
	d.Queues.Visibility = 30 * time.Second
	d.Match = Match{Grace: 30 * time.Second, Every: 2 * time.Minute, Today: true}
	d.Overrides = []Override{
		{What: fmt.Sprintf("every function's timeout is %s", localTimeout),
			Why: "a lease is an invocation's deadline plus the margin, and the system tests wait leases out (crashes, take-overs); " +
				"the code reads its deadline, so nothing else changes"},
		{What: fmt.Sprintf("the command queues' visibility timeout is %s", d.Queues.Visibility),
			Why: "a transient failure's retry waits it out, and a shorter one keeps the redrive tests short; " +
				"AWS's rule of 6 × the consumer's timeout binds event source mappings, which the local stack plays itself"},
		{What: fmt.Sprintf("the daily match runs every %s over the current day so far too, with a grace of %s", d.Match.Every, d.Match.Grace),
			Why: "a developer sees a planted difference within minutes, not the next day"},
	}
	return d
}

// Function is the function named name; a name the description lacks is a
// programming error.
func (d Description) Function(name string) Function {
	for _, f := range d.Functions {
		if f.Name == name {
			return f
		}
	}
	panic("deploy: no function " + name)
}

// HiddenInFlight is how long a command that meets a key in flight is
// hidden: until the longest lease of a consumer has ended plus T and the
// skew.
func (d Description) HiddenInFlight() time.Duration {
	return d.Function(FunctionConsumer).Timeout + d.Protocol.LeaseMargin + d.Protocol.InTransitBound + d.Protocol.ClockSkew
}

// WorstRedrive is the longest a command may take through its queue
// before the dead-letter queue: hidden once per lease it meets, its own
// key's and a refund's charge's, a sweep for each of the two, then a
// visibility timeout per remaining receive.
func (d Description) WorstRedrive() time.Duration {
	hidden := InFlightReceives + ChargeReceives
	return time.Duration(hidden)*d.HiddenInFlight() + 2*d.SweepInterval +
		time.Duration(d.Queues.MaxReceives-hidden)*d.Queues.Visibility
}

// Binaries are the packages under functions/ the functions are built from,
// each once, in the order of Functions.
func (d Description) Binaries() []string {
	var out []string
	for _, f := range d.Functions {
		if !slices.Contains(out, f.Binary) {
			out = append(out, f.Binary)
		}
	}
	return out
}
