package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// An alarmSpec is one row of the runbook: the alarms it names, when they
// fire and what to do. Each alarm's description in CloudWatch is built
// from its spec (description), and the runbook in docs/operating.md is
// generated from the specs (renderRunbook; TestRunbookIsGenerated fails
// when the document differs).
type alarmSpec struct {
	// name is how the runbook names the alarms: an alarm's id less its
	// "Alarm", or a family's pattern (`<Function>Errors`, `QueueAge-<queue>`).
	name string
	// when says when it fires; do, what to do. Both are runbook prose,
	// backquotes included.
	when, do string
}

// runbook is every alarm's spec, in the runbook's order, with cfg's
// thresholds.
func runbook(cfg Config) []alarmSpec {
	recordAge := int(*publisherMaxRecordAge.ToHours(nil))
	return []alarmSpec{
		{"DeadLetters", "the DLQ holds a message: it ran out of receives (stays in alarm until the DLQ is drained)",
			"a real failure: check the acquirer and the table, then have the producer resend it (same key: a replay if it was charged)"},
		{"RejectedCommands", "the rejected-commands queue holds a refusal (until drained)",
			"read `reject_code`/`reject_reason` and tell its producer; never retried"},
		{"ProducerNotAllowed", "a command from an unknown queue, a foreign account, or the wrong type",
			"a producer is misconfigured or someone forges commands: read `source_queue`"},
		{"Api5xxRate", fmt.Sprintf("over %d %% of ≥ %d answers in 5 min were 5xx, the deliberate 503s included", api5xxPercent, api5xxMinRequests),
			"with `…Pending` or `…Unavailable`, the acquirer or the table fails; alone, check the charge function's errors"},
		{"<Entry>Pending", fmt.Sprintf("≥ %d charges over HTTP (`Charge`) or the queues (`Consumer`) left the outcome unknown (503 `CHARGE_OUTCOME_PENDING`)", cfg.AlarmPendingPer5Min),
			"the acquirer times out or drops; they resolve on retry or by the reconciler: check the acquirer and `AcquirerErrors`"},
		{"<Entry>Unavailable", "the table failed before anything was sent (503)",
			"check the DynamoDB alarms: throttles and system errors"},
		{"AcquirerErrors", fmt.Sprintf("≥ %d failed acquirer calls (nothing sent or outcome unknown), HTTP and queues together", cfg.AlarmPendingPer5Min),
			"the acquirer is down, slow, or refuses the credential"},
		{"QueueAge-<queue>", fmt.Sprintf("a command older than %d min (the redrive's worst path is 17 min 4 s)", queueAgeAlarm/60),
			"its consumer fails, is throttled or its mapping is disabled: check the consumer's errors and its event source mapping"},
		{"<Function>Errors", "an invocation failed",
			"read its ERROR lines (requestId/messageId, record); a timeout or an out-of-memory end writes none: compare its Duration Maximum with its timeout, or set its system log level to INFO for Lambda's REPORT lines"},
		{"<Function>Throttles", fmt.Sprintf("≥ %d throttles", cfg.AlarmThrottlesPer5Min),
			"raise the reservation or the account's quota, or lower the stage throttle"},
		{"<Function>Duration", "p99 duration above 80 % of its timeout",
			"the acquirer or the table is slow; leases and the in-transit bound assume invocations finish in time"},
		{"SweeperHeartbeat", "no successful sweep in 5 min: the alarm has no data (INSUFFICIENT_DATA pages like ALARM). " +
			"A new alarm starts without data and acts only on a change, so the first deploy does not page before the first sweep " +
			"(nor if the schedule never ran at all: check the dashboard after a first deploy)",
			"stale records are not reconciled and held records not counted: check the schedule rule and the sweeper's errors"},
		{"AcquirerMismatch", "an acquirer's answer disagreed with the request or with itself (outcome `acquirer_mismatch`): the first one pages",
			"`idemctl held`; compare both sides with the acquirer's own records; `idemctl void-confirmed` (you voided it there) or `accept` (its terms stand)"},
		{"HeldRecords", "the sweeper counted a record held for an operator",
			"nothing settles a held record but an operator: `idemctl held`, then settle each with `idemctl void-confirmed` or `accept` " +
				"(`--operation refund` for a refund's record)"},
		{"RefundMismatch", "a refund's acquirer answer disagreed with what was sent or with itself, or with its row (`RefundMismatches`, also counted by `AcquirerMismatch`): the first one pages",
			"`idemctl held`; the refund's record shows what was sent and answered, and its entry on the charge's balance. Ask the acquirer what it refunded"},
		{"HeldRefunds", "the sweeper counted a held refund: its amount stays reserved on the charge, so it cannot be refunded again",
			"`idemctl accept --operation refund` books the acquirer's refund only if its lookup agrees with the reservation; otherwise have the refund voided " +
				"at the acquirer and `idemctl void-confirmed --operation refund` (it waits out T + skew, releases the reservation, then the key). " +
				"A refund the acquirer made on other terms than reserved is a matter for the acquirer and the books, never for the tool"},
		{"CaptureMismatch", "a capture's acquirer answer disagreed with what was sent or with itself (`CaptureMismatches`, also counted by `AcquirerMismatch`): the first one pages",
			"`idemctl held`; `idemctl inspect --operation capture` shows what was sent and answered, and the charge's balance. Ask the acquirer what it captured"},
		{"VoidMismatch", "a void's acquirer answer disagreed with what was sent or with itself (`VoidMismatches`, also counted by `AcquirerMismatch`): the first one pages",
			"`idemctl held`; `idemctl inspect --operation void` shows what was sent and answered. Ask the acquirer whether the authorization was released"},
		{"HeldCaptures", "the sweeper counted a held capture: its amount stays reserved on the authorization, and a held final capture blocks every other capture and the void",
			"`idemctl accept --operation capture` books the acquirer's capture only if its lookup agrees with the reservation; otherwise have it undone at the acquirer " +
				"and `idemctl void-confirmed --operation capture` (it waits out T + skew, releases the reservation, then the key)"},
		{"HeldVoids", "the sweeper counted a held void: it blocks every capture of the charge until settled",
			"`idemctl accept --operation void` books the release only if the acquirer's lookup agrees; if the acquirer released nothing, " +
				"`idemctl void-confirmed --operation void` gives the authorization back to captures"},
		{"MovementsWithoutRow", "the daily match found a movement in the acquirer's report of a day under a key no row has: an action made after its request was released, " +
			"an authorization made outside the service, or an operator's `void-confirmed` the acquirer contradicts",
			"`idemctl match --date D` shows each line with what the table and the acquirer hold; have the acquirer undo it, or book it through the channel " +
				"(`idemctl accept` while its record is held); never by hand in the table"},
		{"RowsWithoutMovement", "the daily match found a row whose movement the acquirer's report of its day does not have, nor its lookup on another day: " +
			"the acquirer reversed it or lost it",
			"`idemctl match --date D`; ask the acquirer with the row's ids, and settle with it: the row stands until the acquirer says otherwise"},
		{"TermsDiffer", "the daily match found a row and its movement that disagree on status, amount or currency",
			"`idemctl match --date D` shows both sides; the acquirer's report is what moved: take it up with the acquirer"},
		{"RefundedOverCaptured", "the daily match found a charge whose refunds, as the acquirer moved them, are above what it captured",
			"money left the merchant twice: `idemctl match --date D` names the charge and its totals; ask the acquirer to reverse the extra refund"},
		{"CapturedOverAuthorized", "the daily match found a charge whose captures, as the acquirer moved them, are above what it authorized",
			"`idemctl match --date D` names the charge and its totals; ask the acquirer to reverse the extra capture"},
		{"StaleRecords", "the sweeper flagged records left in flight (held records are never among them)",
			"usually self-healing; watch `StaleFailing`"},
		{"StaleFailing", "records still in flight after 3 reconciliations",
			"the acquirer's lookups fail; `idemctl inspect` / `reconcile`"},
		{"OldestStale", fmt.Sprintf("a record stale for over %d min since its last reconcile attempt (its back-off has reached 16 min)", staleHorizon/60),
			"reconcile it with `idemctl`; find why the reconciler cannot"},
		{"TableThrottles", "DynamoDB throttled the table",
			"a new on-demand table starts at 4,000 WRU/s: pre-warm it or request more (docs/deploying.md, capacity)"},
		{"IndexThrottles", "DynamoDB throttled the in-flight index",
			"its writes back-pressure the table's: check the shard spread"},
		{"TableSystemErrors", "DynamoDB answered 5xx",
			"the functions answer 503; check the AWS Health Dashboard"},
		{"TableProbe", fmt.Sprintf("%d minutes in a row without a sweeper's probe that the table answered (its strongly consistent read failed, or no sweeper ran: "+
			"missing data is breaching). In the multi-region mode this region's Route 53 health check is unhealthy and the domain resolves to the other regions. "+
			"A new stack's alarm can page once before its sweeper's first runs", tableProbePeriods),
			"read the sweeper's `table probe` lines (`error`): with `TableSystemErrors` or `TableThrottles` the table fails; with `SweeperHeartbeat` " +
				"the sweeper does not run (its schedule rule, its errors). The alarm turns OK, and the region returns to the domain, at the first minute whose probe the table answers"},
		{"PublisherIteratorAge", fmt.Sprintf("the publisher of the outcome events is over %d h behind the table's stream", publisherLagAlarm/3600),
			fmt.Sprintf("read its WARN lines (`publish failed`): the topic refuses or fails; once fixed the stream redelivers from the failed record. "+
				"At %d h the trigger gives the batch up (`PublisherFailures`)", recordAge)},
		{"PublisherFailures", "the trigger gave a batch up: the publisher-failures queue holds its shard and sequence range, not its records",
			fmt.Sprintf("within %d h, while the stream holds them: `idemctl republish --failures-queue URL`; after that, "+
				"`idemctl republish --charge ID` for the charges written in the window it gives (docs/events.md)", streamRetentionHours-recordAge)},
		{"StreamUndecodable", "the publisher skipped a stream record it could not decode",
			"its ERROR line names the record: `idemctl republish --charge ID` for its charge"},
		{"UndeliveredOutcomes", "SNS could not deliver events to an outcome queue (its policy or the queue broken)",
			"fix the queue, then republish the events' charges (`--charge`, each message names its charge)"},
		{"OutcomesUnread-<subscriber>", fmt.Sprintf("an event has waited %d days on a subscriber's outcome queue, which keeps them %d",
			outcomeUnreadAlarm/86400, int(*outcomeRetention.ToDays(nil))),
			"the subscriber stopped reading: tell it before its events expire"},
	}
}

// specOf is the spec named name in cfg's runbook; a name without a spec
// is a programming error.
func specOf(cfg Config, name string) alarmSpec {
	for _, s := range runbook(cfg) {
		if s.name == name {
			return s
		}
	}
	panic("no runbook row " + name)
}

// description is an alarm's description in CloudWatch: its spec's when,
// naming subject (a function, a queue, a subscriber) where the spec is a
// family's, and what to do.
func (s alarmSpec) description(subject string) string {
	when := s.when
	if subject != "" {
		when += " (" + subject + ")"
	}
	return capitalize(when) + ". To do: " + s.do
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// renderRunbook is the runbook's table as docs/operating.md holds it, with
// prod's thresholds.
func renderRunbook(prod Config) string {
	var b strings.Builder
	b.WriteString("| alarm | fires when | do |\n|---|---|---|\n")
	for _, s := range runbook(prod) {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", s.name, s.when, s.do)
	}
	return b.String()
}
