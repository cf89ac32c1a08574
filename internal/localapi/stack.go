package localapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idempotent-payments/idempay/internal/idem/dynamostore"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// StackConfig describes a local stack: the table, the sandbox acquirer, the
// functions under the RIE and the gateway in front of them.
type StackConfig struct {
	// RIE is the aws-lambda-rie binary; BinDir holds <function>/bootstrap
	// built for this machine.
	RIE, BinDir string
	TableName   string
	// GatewayAddr and SandboxAddr are listen addresses ("127.0.0.1:0" picks a port).
	GatewayAddr, SandboxAddr string
	// Secret verifies the bearer JWTs (HS256).
	Secret []byte
	// Instances per function (at least 2 for the charge function).
	Instances int
	// Timeout is the function timeout.
	Timeout time.Duration
	// Env is added to every function's environment (tuning such as
	// IN_TRANSIT_BOUND); the stack adds TABLE_NAME and ACQUIRER_URL.
	Env []string
	// Output receives the functions' logs (discarded when nil).
	Output io.Writer
}

// Stack is a running local stack. Close stops all of it.
type Stack struct {
	// URL is the gateway's base URL; SandboxURL the acquirer's.
	URL, SandboxURL string
	// TableName is the stack's table.
	TableName string
	Sandbox   *sandbox.Server
	Charge    *Pool
	// DynamoDB is a client for the stack's table, built like the functions' own.
	DynamoDB *dynamodb.Client

	servers       []*http.Server
	sandboxServer *http.Server
}

// StopSandbox closes the sandbox acquirer's listener and connections: from
// then on the functions' acquirer calls are refused (nothing sent).
func (s *Stack) StopSandbox() { _ = s.sandboxServer.Close() }

// StartStack creates the table (if missing) and starts everything. The
// DynamoDB endpoint comes from the SDK's standard variables.
func StartStack(ctx context.Context, cfg StackConfig) (*Stack, error) {
	if cfg.Instances < 2 {
		cfg.Instances = 2
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	s := &Stack{TableName: cfg.TableName, DynamoDB: dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })}
	if err := dynamostore.CreateTable(ctx, s.DynamoDB, cfg.TableName); err != nil {
		return nil, err
	}
	s.Sandbox = sandbox.New("")
	sandboxURL, err := s.serve(cfg.SandboxAddr, s.Sandbox)
	if err != nil {
		return nil, err
	}
	s.SandboxURL = sandboxURL
	s.sandboxServer = s.servers[len(s.servers)-1]
	env := append([]string{"TABLE_NAME=" + cfg.TableName, "ACQUIRER_URL=" + sandboxURL}, cfg.Env...)
	s.Charge, err = StartPool(PoolConfig{
		RIE: cfg.RIE, Bootstrap: filepath.Join(cfg.BinDir, "charge", "bootstrap"), Name: "charge",
		Instances: cfg.Instances, Timeout: cfg.Timeout, Env: env, Output: cfg.Output,
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	gw := &Gateway{Secret: cfg.Secret, Routes: []Route{
		{Key: "POST /v1/charges", Target: s.Charge},
		{Key: "GET /v1/charges/{id}", Target: s.Charge},
	}}
	if s.URL, err = s.serve(cfg.GatewayAddr, gw); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Stack) serve(addr string, h http.Handler) (string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	s.servers = append(s.servers, srv)
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	return "http://" + l.Addr().String(), nil
}

// Close stops the gateway, the functions and the sandbox.
func (s *Stack) Close() {
	for _, srv := range s.servers {
		_ = srv.Close()
	}
	if s.Charge != nil {
		s.Charge.Close()
	}
}
