package deploy

// The functions' environment variables, each name written once: the
// functions read them (setup), and the CDK app and the local stack set
// them under these constants.
const (
	EnvTableName       = "TABLE_NAME"           // the table (required)
	EnvAcquirerURL     = "ACQUIRER_URL"         // the acquirer's base URL (required)
	EnvAcquirerID      = "ACQUIRER_ID"          // the acquirer's logical id, stored on every record (required)
	EnvAcquirerAPIKey  = "ACQUIRER_API_KEY"     // a static acquirer credential (local only)
	EnvAcquirerSecret  = "ACQUIRER_SECRET_ARN"  // the Secrets Manager secret holding the credential
	EnvAccountClaim    = "ACCOUNT_CLAIM"        // the JWT claim naming the account (DefaultAccountClaim)
	EnvEnvironment     = "ENVIRONMENT"          // the metrics' Environment dimension ("local")
	EnvRetentionDays   = "RETENTION_DAYS"       // how long a key is remembered (90)
	EnvLeaseMargin     = "LEASE_MARGIN"         // added to the invocation deadline to make the lease
	EnvInTransitBound  = "IN_TRANSIT_BOUND"     // T, DESIGN §4 rule 3
	EnvClockSkew       = "CLOCK_SKEW"           // the skew margin added to T
	EnvAcquirerTimeout = "ACQUIRER_TIMEOUT"     // the cap of one acquirer call
	EnvCacheSize       = "CACHE_SIZE"           // the warm cache of completed records
	EnvMaxAmount       = "MAX_AMOUNT"           // the largest charge, in minor units
	EnvAuthWindow      = "AUTHORIZATION_WINDOW" // how long an authorization without its capture lasts, unless the acquirer says
	EnvLogLevel        = "LOG_LEVEL"            // the log level outside Lambda's logging controls
	EnvTableMode       = "TABLE_MODE"           // the table's mode (TableMode; SingleRegion when unset)
	EnvPurgeWindow     = "PURGE_WINDOW"         // the sweeper's purge window, without TTL (Description.PurgeWindow)
	EnvStaleRegion     = "STALE_REGION"         // when another region has stopped, in the multi-region mode (Description.StaleRegion)
	EnvRegion          = "AWS_REGION"           // the region a function runs in: Lambda sets it
	EnvLocalRegion     = "IDEMPAY_REGION"       // the region a local stack's functions call their own, where one emulator plays several (local only)
	EnvMatchGrace      = "MATCH_GRACE"          // how long the daily match waits before it pairs a line (Match.Grace)
	EnvMatchToday      = "MATCH_TODAY"          // "true": the match also matches the current day so far (Match.Today; local only)

	// "true" when the table is DynamoDB Local (the local stack sets it; the
	// CDK app never does): see DynamoDB.
	EnvSkipResponseCRC32 = "DYNAMODB_SKIP_RESPONSE_CRC32"

	// The queue wiring: the queues a consumer reads (command.EncodeInboxes),
	// the reconcile-commands queue, the only one the sweeper writes to,
	// and the rejected-commands queue, where a consumer puts every command
	// it refuses (with reject_code and reject_reason). The DLQ proper holds
	// only what ran out of receives, so a refusal and a real failure alarm
	// apart.
	EnvCommandSources    = "COMMAND_SOURCES"
	EnvReconcileQueueURL = "RECONCILE_QUEUE_URL"
	EnvRejectedQueueURL  = "REJECTED_URL"
	// The outcome events' topic (the publisher's, and the consumer's for
	// its rejections).
	EnvOutcomeTopicARN = "OUTCOME_TOPIC_ARN"
	// The operator's channel, as idemctl reads it from its shell: the
	// operator function's URL (the stack's OperatorUrl output, or what
	// `make run` prints). It names where to ask, never what to believe:
	// the channel authenticates the caller, and the deployment alone
	// decides which acquirer is asked.
	EnvOperatorURL = "OPERATOR_URL"

	// A local switch: CPU profiles of each function process, between
	// pairs of SIGUSR1, written to this path plus its process id and the
	// profile's number (setup.ProfileSignal).
	EnvCPUProfile = "IDEMPAY_CPU_PROFILE"

	// Names that others define: Lambda's advanced logging controls, the
	// OpenTelemetry exporter's endpoint (set with the collector layer) and
	// Go's runtime.
	EnvLambdaLogLevel = "AWS_LAMBDA_LOG_LEVEL"
	EnvOTLPEndpoint   = "OTEL_EXPORTER_OTLP_ENDPOINT"
	// Go's own: how many threads run Go code at once (Processors).
	EnvGOMAXPROCS = "GOMAXPROCS"
)

// LocalOnly are the variables only local runs set; the CDK app never does.
var LocalOnly = []string{EnvAcquirerAPIKey, EnvLocalRegion, EnvSkipResponseCRC32, EnvCPUProfile}
