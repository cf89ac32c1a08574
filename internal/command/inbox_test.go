package command_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/command"
)

func TestInboxes(t *testing.T) {
	t.Parallel()
	sources := []command.Inbox{
		{ARN: "arn:q:orders", URL: "https://q/orders", Producer: "orders", Accounts: []string{"acct_1", "acct_2"}},
		{ARN: "arn:q:reconcile", URL: "https://q/reconcile", Reconcile: true},
	}
	value, err := command.EncodeInboxes(sources)
	if err != nil {
		t.Fatal(err)
	}
	back, err := command.ParseInboxes(value)
	if err != nil || !reflect.DeepEqual(back, sources) {
		t.Fatalf("ParseInboxes(%s) = %+v, %v", value, back, err)
	}
	for _, tc := range []struct{ value, want string }{
		{``, "COMMAND_SOURCES"},
		{`[]`, "no queue"},
		{`[{"arn":"a","url":"u","producer":"p","accounts":["acct_1"],"Producer":"q"}]`, "unknown member"},
		{`[{"arn":"a","url":"u","producer":"p","accounts":["acct_1"]},{"arn":"a","url":"u2","reconcile":true}]`, "listed twice"},
		{`[{"arn":"a","url":"u","producer":"p","accounts":[]}]`, "at least one account"},
		{`[{"arn":"a","url":"u","accounts":["acct_1"]}]`, "names its producer"},
		{`[{"arn":"a","url":"u","reconcile":true,"accounts":["acct_1"]}]`, "no producer or accounts"},
		{`[{"arn":"a","url":"u","producer":"p","accounts":["acct\u0000"]}]`, "control character"},
		{`[{"url":"u","producer":"p","accounts":["acct_1"]}]`, "arn and url are required"},
	} {
		if _, err := command.ParseInboxes(tc.value); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseInboxes(%s) = %v; want an error with %q", tc.value, err, tc.want)
		}
	}
}

func TestInboxAdmits(t *testing.T) {
	t.Parallel()
	orders := command.Inbox{ARN: "a", URL: "u", Producer: "orders", Accounts: []string{"acct_1"}}
	rec := command.Inbox{ARN: "b", URL: "u", Reconcile: true}
	charge := command.Charge("acct_1", "key-12345", []byte(`{}`))
	for _, tc := range []struct {
		src  command.Inbox
		c    command.Command
		want bool
	}{
		{orders, charge, true},
		{orders, command.Charge("acct_2", "key-12345", []byte(`{}`)), false},
		{orders, command.Reconcile("IDEM#6:charge6:acct_18:key-1234"), false},
		{rec, command.Reconcile("IDEM#6:charge6:acct_18:key-1234"), true},
		{rec, charge, false},
		{orders, command.Refund("acct_1", "ch_1", "key-12345", []byte(`{}`)), true},
		{orders, command.Refund("acct_2", "ch_1", "key-12345", []byte(`{}`)), false},
		{rec, command.Refund("acct_1", "ch_1", "key-12345", []byte(`{}`)), false},
	} {
		if ok, why := tc.src.Admits(tc.c); ok != tc.want || (!ok && why == "") {
			t.Errorf("%+v admits %+v = %v %q; want %v", tc.src, tc.c, ok, why, tc.want)
		}
	}
}
