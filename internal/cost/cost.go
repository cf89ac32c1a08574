package cost

// Usage is what one charge of a path uses, as the bill counts it: every
// field per charge.
type Usage struct {
	// MemoryMB and BilledMS are the invoked function's memory size and its
	// billed duration per invocation (each rounded up to the millisecond);
	// Invocations is how many invocations a charge takes (1 over HTTP, a
	// share of a batch on the queue).
	MemoryMB    int
	BilledMS    float64
	Invocations float64
	// ColdStartMS is what a cold invocation bills on top, its init phase,
	// and ColdShare the share of invocations that start cold.
	ColdStartMS, ColdShare float64
	// APIRequests are HTTP API requests (1 over HTTP, 0 on the queue).
	APIRequests float64
	// WriteUnits and ReadUnits are DynamoDB's request units, replicated
	// writes included.
	WriteUnits, ReadUnits float64
	// CommandRequests are SQS requests of the charge command: its send,
	// and its share of the receive and the delete of its batch.
	CommandRequests float64
	// The outcome event: its SNS publishes, the subscriber's SQS requests
	// (its share of a receive and a delete of a batch), and the
	// publisher's invocations with their billed duration at its size.
	Publishes, EventRequests float64
	PublisherInvocations     float64
	PublisherBilledMS        float64
	PublisherMemoryMB        int
	// LogBytes are the bytes of log lines the functions write for it,
	// which CloudWatch Logs ingests.
	LogBytes float64
}

// Part is one line of the bill: its name and its dollars per million
// charges.
type Part struct {
	Name    string
	Dollars float64
}

// The parts' names, in the bill's order.
const (
	PartDuration = "Lambda duration"
	PartRequests = "Lambda requests"
	PartAPI      = "API Gateway"
	PartWrites   = "DynamoDB writes"
	PartReads    = "DynamoDB reads"
	PartCommands = "SQS commands"
	PartEvent    = "outcome event"
	PartLogs     = "CloudWatch Logs"
)

// gibibyte is the GB of Lambda's GB-seconds (memory in MB ÷ 1,024) and of
// CloudWatch Logs' ingestion.
const gibibyte = 1 << 30

// PerMillion is the bill of a million charges that each use u, by part.
func PerMillion(u Usage) []Part {
	gbSeconds := func(memoryMB int, ms float64) float64 { return float64(memoryMB) / 1024 * ms / 1000 }
	million := func(perCharge float64) float64 { return perCharge * 1e6 }
	return []Part{
		{PartDuration, million(u.Invocations * gbSeconds(u.MemoryMB, u.BilledMS+u.ColdShare*u.ColdStartMS) * LambdaGBSecond)},
		{PartRequests, million(u.Invocations * LambdaRequest)},
		{PartAPI, million(u.APIRequests * HTTPAPIRequest)},
		{PartWrites, million(u.WriteUnits * DynamoDBWriteUnit)},
		{PartReads, million(u.ReadUnits * DynamoDBReadUnit)},
		{PartCommands, million(u.CommandRequests * SQSRequest)},
		{PartEvent, million(u.Publishes*SNSPublish + u.EventRequests*SQSRequest +
			u.PublisherInvocations*(LambdaRequest+gbSeconds(u.PublisherMemoryMB, u.PublisherBilledMS)*LambdaGBSecond))},
		{PartLogs, million(u.LogBytes / gibibyte * LogsIngestedGB)},
	}
}

// Total is the sum of the parts.
func Total(parts []Part) float64 {
	var t float64
	for _, p := range parts {
		t += p.Dollars
	}
	return t
}

// LongPollSeconds is how long each of Lambda's receives of an SQS event
// source waits for messages: 20 s, the most SQS allows.
const LongPollSeconds = 20

// IdleQueueMonthly is what an SQS queue polled by a Lambda event source
// mapping costs a month while it is empty: each of pollers polls it with
// 20-second long polls, and an empty receive is billed as a request. A
// fixed cost per queue, not per charge.
func IdleQueueMonthly(pollers float64) float64 {
	const secondsPerMonth = 30 * 24 * 3600
	return pollers * secondsPerMonth / LongPollSeconds * SQSRequest
}
