package main

import "testing"

// TestBucketOfTakesTheInnermostFrameThatNamesOne: a stack goes to the
// bucket of its innermost frame that names one, however many of the
// frames outside it name others.
func TestBucketOfTakesTheInnermostFrameThatNamesOne(t *testing.T) {
	const internal = "github.com/idempotent-payments/idempay/internal/"
	for _, c := range []struct {
		stack []string
		want  string
	}{
		{[]string{"crypto/sha256.block", "github.com/aws/aws-sdk-go-v2/aws/signer/v4.(*Signer).SignHTTP", "github.com/aws/smithy-go/middleware.decoratedHandler.Handle", internal + "dynamo.putRow"}, "the SDK: signing"},
		{[]string{"crypto/sha256.block", internal + "idem.Canonical.Encode", internal + "charge.(*Service).Charge"}, "the fingerprint"},
		{[]string{"syscall.write", "os.(*File).Write", "log/slog.(*JSONHandler).Handle", internal + "httpapi.(*Handler).observe"}, "logging"},
		{[]string{"encoding/json.Marshal", internal + "obs.(*Metrics).write", internal + "httpapi.(*Handler).observe"}, "metrics"},
		{[]string{"syscall.write", "net/http.(*persistConn).writeLoop"}, "HTTP exchanges (net/http: runtime API, DynamoDB, acquirer)"},
		{[]string{"encoding/json.Unmarshal", "github.com/aws/aws-lambda-go/lambda.reflectHandler.func2"}, "reading the event (aws-lambda-go)"},
		{[]string{internal + "strictjson.Unmarshal", internal + "charge.ParseRequest"}, "strict decoding"},
		{[]string{internal + "op.Run", internal + "charge.(*Service).claimAndExecute"}, "the engine and the service"},
		{[]string{"runtime.gcDrain", "runtime.gcBgMarkWorker"}, runtimeBucket},
	} {
		if got := bucketOf(c.stack); got != c.want {
			t.Errorf("%s: %q, want %q", c.stack[0], got, c.want)
		}
	}
}
