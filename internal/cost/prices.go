// Package cost turns what a charge uses into what AWS bills for it: the
// on-demand list prices in us-east-1, each written once here with where
// it was read, and the arithmetic of dollars per million charges by part.
//
// There is no internet on the machines this is built on; every price was
// read from a stored copy of a public page, on 2026-12-02. AWS's own
// pricing pages fill their rate tables in by script, so their stored
// copies carry the wording but not the figures; where a figure comes from
// another page, the comment says so, and what AWS's own text confirms of
// it.
package cost

// Lambda, Arm (Graviton), the first tier (the first 7.5 billion GB-seconds
// a month). The per GB-second figure is read from
// cloudchipr.com/blog/aws-lambda-pricing ("Ultimate Guide 2024", updated
// 2025), and is AWS's x86 figure ($0.0000166667, AWS whitepaper "How AWS
// Pricing Works", Lambda) less the 20 % AWS states for Arm (AWS News Blog,
// Graviton2 for Lambda, updated 2023-06-19). Requests: the same whitepaper.
// Duration is rounded up to the millisecond, and the init phase of a
// function is billed as duration for every runtime since 2025-08-01 (AWS
// Compute Blog, "AWS Lambda standardizes billing for INIT phase").
const (
	LambdaGBSecond = 0.0000133334 // $ per GB-second, arm64
	LambdaRequest  = 0.20 / 1e6   // $ per invocation
)

// API Gateway HTTP API: $1.00 per million requests for the first 300
// million a month, each request metered in 512 KB increments (AWS
// whitepaper "Best practices for designing private APIs", cost
// optimization, table 4, API calls in us-east-1).
const HTTPAPIRequest = 1.00 / 1e6 // $ per request

// DynamoDB on demand, the Standard table class, after the cut of
// 2024-11-01 (airbyte.com, "DynamoDB pricing", 2025-07-21; AWS's news blog
// on on-demand throughput notes the reduced pricing, updated 2025-01-31).
// A global table bills each write once more per replica as a replicated
// write unit, priced as a write unit (DynamoDB Developer Guide, "Global
// tables billing").
const (
	DynamoDBWriteUnit = 0.625 / 1e6 // $ per write request unit
	DynamoDBReadUnit  = 0.125 / 1e6 // $ per read request unit
)

// SQS standard queues: $0.40 per million requests after the first million
// a month, each 64 KB of a request's payload one request
// (factualminds.com, us-east-1, June 2026). Empty receives are billed as
// requests (AWS Knowledge Center, "Why am I seeing high charges on my SQS
// bill", which names the long polls of an SQS-triggered Lambda function).
const SQSRequest = 0.40 / 1e6 // $ per request

// SNS standard topics: $0.50 per million publishes, each 64 KB of payload
// one (factualminds.com, 2026-06-13; the 64 KB chunking in AWS's SNS FAQ).
// Its deliveries to SQS queues are not priced here: no stored page states
// their price, and AWS's SNS pricing has listed them at no charge; the
// receiving queue's requests are (SQSRequest).
const SNSPublish = 0.50 / 1e6 // $ per publish

// CloudWatch Logs, the Standard log class: $0.50 per GB ingested
// (hykell.com and c3x.dev, us-east-1, June 2026); Lambda's logs are tiered
// since 2025-05-01, the first tier at the same price (duckbillgroup.com).
const LogsIngestedGB = 0.50 // $ per GB

// DynamoDB Streams: reads by a Lambda trigger are not billed (DynamoDB
// Developer Guide, "Optimizing costs of DynamoDB Streams").
const StreamReadByLambda = 0.0
