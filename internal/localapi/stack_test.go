package localapi

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
)

// TestStackBindsItsAddressesFirst: the stack binds the addresses it
// serves on before it does anything else, and before any emulator is
// given a port: a gateway address already in use fails the start with
// that address, before the table is created.
func TestStackBindsItsAddressesFirst(t *testing.T) {
	// No DynamoDB there: a stack that reached its table would fail on it.
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:1", "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
	} {
		t.Setenv(k, v)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, err = StartStack(context.Background(), StackConfig{
		TableName: "stack-binds-first", GatewayAddr: taken.Addr().String(), SandboxAddr: "127.0.0.1:0",
	})
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), taken.Addr().String()) {
		t.Fatalf("the stack started with its gateway's address in use: %v", err)
	}
}
