package command

import (
	"fmt"
	"slices"

	"github.com/go-json-experiment/json"

	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/strictjson"
)

// The dead-letter codes of the queue path alone (a refused charge command
// otherwise carries the code the HTTP route answers it with): a message that
// is not a command, and a command its queue's producer may not send (an
// unknown queue, a foreign account, or the wrong type for the queue).
const (
	RejectMalformed          = "MALFORMED"
	RejectProducerNotAllowed = "PRODUCER_NOT_ALLOWED"
)

// Inbox is one queue a consumer reads, and what may arrive on it. The
// producer of a command is the queue it arrived on: a record's
// eventSourceARN is set by Lambda's event source mapping, not by the
// sender, and each producer queue's policy admits only its producer's role.
// So a producer can neither name another producer nor charge an account
// outside its own list.
type Inbox struct {
	// ARN is the queue's ARN, as the records' eventSourceARN; URL is its URL,
	// for changing a message's visibility.
	ARN string `json:"arn"`
	URL string `json:"url"`
	// Producer names the one producer that sends on this queue, and Accounts
	// are the accounts its charge commands may charge. A producer queue
	// carries charge commands only.
	Producer string   `json:"producer,omitzero"`
	Accounts []string `json:"accounts,omitzero"`
	// Reconcile marks the sweeper's queue: reconcile commands only, never a
	// new charge.
	Reconcile bool `json:"reconcile,omitzero"`
}

// Admits says whether c may arrive on in, and if not why (without echoing
// the command's values): a producer queue admits the operations' commands
// (charge, refund, capture, void) for its accounts, the reconcile queue
// reconcile commands.
func (in Inbox) Admits(c Command) (bool, string) {
	switch {
	case in.Reconcile && c.Type != TypeReconcile:
		return false, "the reconcile queue carries reconcile commands only"
	case in.Reconcile:
		return true, ""
	case !isOperation(c.Type):
		return false, fmt.Sprintf("producer %s may send the operations' commands only", in.Producer)
	case !slices.Contains(in.Accounts, c.Account):
		return false, fmt.Sprintf("producer %s may not act on that account", in.Producer)
	}
	return true, ""
}

// EncodeInboxes returns the value of deploy.EnvCommandSources for inboxes.
func EncodeInboxes(inboxes []Inbox) (string, error) {
	if err := checkInboxes(inboxes); err != nil {
		return "", err
	}
	b, err := json.Marshal(inboxes)
	return string(b), err
}

// ParseInboxes reads the value of deploy.EnvCommandSources strictly: a
// JSON array of inboxes, each with an ARN and a URL, each either a producer (a name and
// at least one valid account) or the reconcile queue, and no ARN twice.
func ParseInboxes(value string) ([]Inbox, error) {
	var inboxes []Inbox
	if err := strictjson.Unmarshal([]byte(value), &inboxes); err != nil {
		return nil, fmt.Errorf("%s: %w", deploy.EnvCommandSources, err)
	}
	if err := checkInboxes(inboxes); err != nil {
		return nil, err
	}
	return inboxes, nil
}

func checkInboxes(inboxes []Inbox) error {
	if len(inboxes) == 0 {
		return fmt.Errorf("%s: no queue", deploy.EnvCommandSources)
	}
	seen := map[string]bool{}
	for i, in := range inboxes {
		bad := func(why string) error {
			return fmt.Errorf("%s: queue %d (%s): %s", deploy.EnvCommandSources, i+1, in.ARN, why)
		}
		switch {
		case in.ARN == "" || in.URL == "":
			return bad("arn and url are required")
		case seen[in.ARN]:
			return bad("listed twice")
		case in.Reconcile && (in.Producer != "" || len(in.Accounts) > 0):
			return bad("the reconcile queue has no producer or accounts")
		case !in.Reconcile && (in.Producer == "" || len(in.Accounts) == 0):
			return bad("a producer queue names its producer and at least one account")
		}
		for _, a := range in.Accounts {
			if err := idem.ValidateAccount(a); err != nil {
				return bad(err.Error())
			}
		}
		seen[in.ARN] = true
	}
	return nil
}

// isOperation reports whether t is an operation's command (a charge's, a
// refund's), not the sweeper's.
func isOperation(t Type) bool {
	_, ok := shapes[t]
	return ok
}
