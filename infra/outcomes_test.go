package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/streamfilter"
)

// sameJSON reports whether a and b are the same JSON value, whatever the
// order of their members.
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return asJSON(x) == asJSON(y)
}

// TestOutcomeEvents: the topic is encrypted and TLS only; each subscriber
// has its own queue, subscribed raw with the code's filter policy and the
// undelivered queue as its dead-letter queue, which only the topic may
// send to; each producer's role may read its own outcome queue and no
// other; the publisher's trigger reads the table's stream from its start
// with the code's filters, bisects, reports item failures and sends a
// batch 6 hours old to the failures queue, 18 hours before the stream
// drops its records; the publisher and the consumer are told
// the topic.
func TestOutcomeEvents(t *testing.T) {
	for _, env := range singleRegionEnvironments {
		tmpl := synth(t, env)
		cfg, _ := ConfigFor(env, testInputs)
		names := deploy.Names{Prefix: "idempay-" + env}

		topics := resources(tmpl, "AWS::SNS::Topic")
		topic := props(byPrefix(t, topics, "Outcomes"))
		if topic["TopicName"] != names.Outcomes() || !strings.Contains(asJSON(topic["KmsMasterKeyId"]), ":alias/aws/sns") {
			t.Errorf("%s: the outcomes topic %s", env, asJSON(topic))
		}
		if tp := asJSON(props(byPrefix(t, resources(tmpl, "AWS::SNS::TopicPolicy"), "OutcomesPolicy"))); !strings.Contains(tp, `"aws:SecureTransport":"false"`) {
			t.Errorf("%s: the outcomes topic takes plain HTTP: %s", env, tp)
		}

		queues := resources(tmpl, "AWS::SQS::Queue")
		queueID := func(prefix string) string {
			for id := range queues {
				if strings.HasPrefix(id, prefix) && !strings.HasPrefix(id[len(prefix):], "-") {
					return id
				}
			}
			t.Fatalf("%s: no queue %s", env, prefix)
			return ""
		}
		undelivered := queueID("UndeliveredOutcomes")
		if n := props(queues[undelivered])["QueueName"]; n != names.UndeliveredOutcomes() {
			t.Errorf("%s: the undelivered queue is named %v", env, n)
		}
		subs := map[string]map[string]any{}
		for _, sub := range resources(tmpl, "AWS::SNS::Subscription") {
			if p := props(sub); p["Protocol"] == "sqs" {
				subs[asJSON(p["Endpoint"])] = p
			}
		}
		if len(subs) != len(subscribersOf(cfg)) {
			t.Errorf("%s: %d queue subscriptions, want one per subscriber %v", env, len(subs), subscribersOf(cfg))
		}
		for _, s := range subscribersOf(cfg) {
			id := queueID("Outcomes" + s)
			if n := props(queues[id])["QueueName"]; n != names.Outcome(s) {
				t.Errorf("%s: %s's outcome queue is named %v", env, s, n)
			}
			sub := subs[`{"Fn::GetAtt":["`+id+`","Arn"]}`]
			if sub == nil {
				t.Errorf("%s: %s's queue is not subscribed", env, s)
				continue
			}
			if !sameJSON(t, asJSON(sub["FilterPolicy"]), event.FilterPolicy(s)) || sub["RawMessageDelivery"] != true ||
				asJSON(sub["RedrivePolicy"]) != `{"deadLetterTargetArn":{"Fn::GetAtt":["`+undelivered+`","Arn"]}}` ||
				!strings.Contains(asJSON(sub["TopicArn"]), `"Outcomes`) {
				t.Errorf("%s: %s's subscription %s, want raw, filter %s, dead letters to %s", env, s, asJSON(sub), event.FilterPolicy(s), undelivered)
			}
		}
		// Only the topic may send to the outcome queues and the undelivered one.
		for _, qp := range resources(tmpl, "AWS::SQS::QueuePolicy") {
			q := asJSON(props(qp)["Queues"])
			if !strings.Contains(q, "Outcomes") {
				continue
			}
			for _, st := range props(qp)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				st := st.(map[string]any)
				if st["Effect"] == "Allow" && (asJSON(st["Principal"]) != `{"Service":"sns.amazonaws.com"}` || st["Action"] != "sqs:SendMessage" ||
					!strings.Contains(asJSON(st["Condition"]), `{"ArnEquals":{"aws:SourceArn":{"Ref":"Outcomes`)) {
					t.Errorf("%s %s: allows %s, want only the outcomes topic to send", env, q, asJSON(st))
				}
			}
		}
		// Each producer reads its own outcome queue.
		policies := resources(tmpl, "AWS::IAM::Policy")
		for _, p := range cfg.Producers {
			doc := asJSON(props(byPrefix(t, policies, "Producer"+p.Name+"Outcomes")))
			if !strings.Contains(doc, `"Resource":{"Fn::GetAtt":["`+queueID("Outcomes"+p.Name)+`","Arn"]}`) || strings.Count(doc, `"Resource"`) != 1 {
				t.Errorf("%s: producer %s's outcome policy %s", env, p.Name, doc)
			}
		}

		m := props(byPrefix(t, resources(tmpl, "AWS::Lambda::EventSourceMapping"), "PublisherMapping"))
		var patterns []string
		for _, f := range m["FilterCriteria"].(map[string]any)["Filters"].([]any) {
			patterns = append(patterns, f.(map[string]any)["Pattern"].(string))
		}
		code := streamfilter.For("").Patterns()
		if len(patterns) != len(code) {
			t.Fatalf("%s: %d filters, the code's %d", env, len(patterns), len(code))
		}
		for i, f := range code {
			if !sameJSON(t, patterns[i], f) {
				t.Errorf("%s: filter %d is %s, the code's %s", env, i, patterns[i], f)
			}
		}
		if asJSON(m["EventSourceArn"]) != `{"Fn::GetAtt":["Table","StreamArn"]}` || m["StartingPosition"] != "TRIM_HORIZON" || m["BatchSize"] != 100.0 ||
			m["BisectBatchOnFunctionError"] != true || asJSON(m["FunctionResponseTypes"]) != `["ReportBatchItemFailures"]` || m["ParallelizationFactor"] != 1.0 ||
			m["MaximumRetryAttempts"] != nil || m["MaximumRecordAgeInSeconds"] != 6*3600.0 ||
			asJSON(m["DestinationConfig"]) != `{"OnFailure":{"Destination":{"Fn::GetAtt":["`+queueID("PublisherFailures")+`","Arn"]}}}` {
			t.Errorf("%s: the publisher's trigger %s", env, asJSON(m))
		}
		if n := props(queues[queueID("PublisherFailures")])["QueueName"]; n != names.PublisherFailures() {
			t.Errorf("%s: the failures queue is named %v", env, n)
		}

		fns := resources(tmpl, "AWS::Lambda::Function")
		for _, fn := range []string{"Publisher", "SqsConsumer"} {
			vars := props(byPrefix(t, fns, fn))["Environment"].(map[string]any)["Variables"].(map[string]any)
			if !strings.HasPrefix(asJSON(vars[deploy.EnvOutcomeTopicARN]), `{"Ref":"Outcomes`) {
				t.Errorf("%s %s: %s = %s", env, fn, deploy.EnvOutcomeTopicARN, asJSON(vars[deploy.EnvOutcomeTopicARN]))
			}
		}
	}
}
