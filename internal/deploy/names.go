package deploy

// Names are the queues and the topic of one deployment, named from its
// prefix (the deployed stack's idempay-<env>, the local stack's table
// name): the CDK app and the local stack both name them here.
type Names struct{ Prefix string }

// Charges is producer's charge-commands queue.
func (n Names) Charges(producer string) string { return n.Prefix + "-charges-" + producer }

// Reconcile is the sweeper's reconcile-commands queue.
func (n Names) Reconcile() string { return n.Prefix + "-reconcile" }

// DLQ is the dead-letter queue of the command queues: what ran out of
// receives.
func (n Names) DLQ() string { return n.Prefix + "-dlq" }

// Rejected is where the consumers put what they refuse.
func (n Names) Rejected() string { return n.Prefix + "-rejected" }

// Outcomes is the topic of the charge outcome events.
func (n Names) Outcomes() string { return n.Prefix + "-outcomes" }

// Outcome is the queue subscriber's outcome events arrive on (a
// producer's name, or event.ProducerHTTP for a merchant backend).
func (n Names) Outcome(subscriber string) string { return n.Prefix + "-outcomes-" + subscriber }

// UndeliveredOutcomes is the dead-letter queue of the topic's
// subscriptions: the events SNS could not deliver to an outcome queue.
func (n Names) UndeliveredOutcomes() string { return n.Prefix + "-undelivered-outcomes" }

// PublisherFailures is the on-failure destination of the publisher's
// trigger: the shard and sequence range of stream records that aged out
// unpublished.
func (n Names) PublisherFailures() string { return n.Prefix + "-publisher-failures" }
