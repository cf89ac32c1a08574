package localapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-payments/idempay/internal/charging"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/localapi/cgroup"
	"github.com/idempotent-payments/idempay/internal/match"
	"github.com/idempotent-payments/idempay/internal/route"
	"github.com/idempotent-payments/idempay/internal/sandbox"
	"github.com/idempotent-payments/idempay/internal/scheduled"
	"github.com/idempotent-payments/idempay/internal/streamfilter"
)

// StackConfig describes a local stack: the table, the sandbox acquirer, the
// functions under the RIE and the gateway in front of them.
type StackConfig struct {
	// RIE is the aws-lambda-rie binary; BinDir holds <function>/bootstrap
	// built for this machine.
	RIE, BinDir string
	TableName   string
	// Region names a region of a multi-region run: its queues and topic
	// are its own (named after the table and the region), while the table,
	// given by TableName, is shared with the other regions' stacks, as a
	// strongly consistent global table is, and its functions call it their
	// region (IDEMPAY_REGION). Empty: the one region (whose name, in the
	// multi-region table mode, is the SDK's region).
	Region string
	// TableMode is the table's (TABLE_MODE): deploy.Local's when empty. A
	// mode without TTL creates the table with its expiry index, and the
	// sweeper purges.
	TableMode deploy.TableMode
	// GatewayAddr, SandboxAddr and OperatorAddr are listen addresses
	// ("127.0.0.1:0" picks a port); SandboxAddr is unused when AcquirerURL
	// is set. OperatorAddr serves the operator's channel (Stack.OperatorURL).
	GatewayAddr, SandboxAddr, OperatorAddr string
	// Principals are identities the stack's IAM knows besides the
	// operator's (OperatorPrincipal): each can sign a request to the
	// operator's channel, and is refused as the resource policy's Deny
	// refuses every principal but the operator's role.
	Principals []Principal
	// AcquirerURL, when set, is an acquirer already serving (such as the
	// sandbox in a process of its own, so that its CPU is counted apart, or
	// an acquirer's test endpoint): the stack then starts no sandbox, and
	// Stack.Sandbox is nil. AcquirerAPIKey is its credential.
	AcquirerURL, AcquirerAPIKey string
	// AcquirerID is the acquirer's logical id (ACQUIRER_ID), stored on
	// every record: SandboxAcquirerID when empty.
	AcquirerID string
	// Trust is what the gateway checks bearer tokens against.
	Trust Trust
	// Instances per function (at least 2 for the charge function).
	Instances int
	// Timeout, when set, is every function's timeout; otherwise each has
	// its own (deploy.Local).
	Timeout time.Duration
	// Env is added to every function's environment (tuning such as
	// IN_TRANSIT_BOUND); the stack adds TABLE_NAME, ACQUIRER_URL and
	// DYNAMODB_SKIP_RESPONSE_CRC32 (its table is DynamoDB Local's).
	Env []string
	// Output receives the functions' logs (discarded when nil).
	Output *os.File
	// SweepInterval is how often the sweeper runs (deploy.Local's when
	// zero); negative: never on its own (tests call Stack.Sweep).
	SweepInterval time.Duration
	// MatchInterval is how often the daily match runs over the current
	// day so far (deploy.Local's Match.Every when zero); negative: never
	// on its own (tests call Stack.RunMatch).
	MatchInterval time.Duration
	// VisibilityTimeout of the command queues and MaxReceives before the
	// DLQ: deploy.Local's when zero.
	VisibilityTimeout time.Duration
	MaxReceives       int
	// NoEventSourceMapping leaves the command queues unpolled, for a test
	// that receives and delivers batches itself.
	NoEventSourceMapping bool
	// NoStreamMapping leaves the table's stream unread and the publisher
	// uninvoked, for a benchmark that measures the charge function alone.
	NoStreamMapping bool
	// Producers each get a charge-commands queue of their own, and may
	// charge only their Accounts (DefaultProducers when empty).
	Producers []Producer
	// Shape runs each function's execution environments as Lambda sizes
	// them (PoolConfig.MemoryMB): its memory size from the description
	// (deploy.Local), or MemoryMB for every function when set
	// (LOCAL_MEMORY_MB). Where cgroups cannot be made the stack runs
	// unshaped and says why (Stack.Unshaped). Unset: full cores, as the
	// tests run. MemoryOnly shapes memory alone, without the CPU quota
	// (PoolConfig.MemoryOnly).
	Shape      bool
	MemoryMB   int
	MemoryOnly bool
}

// EnvMemoryMB is what `make run` and `make bench` read to give every
// function one memory size (StackConfig.MemoryMB) instead of its own.
const EnvMemoryMB = "LOCAL_MEMORY_MB"

// MemoryFromEnv reads EnvMemoryMB with getenv: 0 when unset, else a
// Lambda memory size in MB (deploy.ValidMemory).
func MemoryFromEnv(getenv func(string) string) (int, error) {
	v := getenv(EnvMemoryMB)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || !deploy.ValidMemory(n) {
		return 0, fmt.Errorf("%s=%q: want a memory size in MB from %d to %d", EnvMemoryMB, v, deploy.MinMemoryMB, deploy.MaxMemoryMB)
	}
	return n, nil
}

// Producer is one sender of charge commands and the accounts it may charge.
type Producer struct {
	Name     string
	Accounts []string
}

// SandboxAcquirerID is the logical id of the sandbox acquirer, the
// default of StackConfig.AcquirerID.
const SandboxAcquirerID = "sandbox"

// DefaultProducers is what `make run` and `make send-charge` use: one
// producer, "local", that may charge the demo account.
var DefaultProducers = []Producer{{Name: "local", Accounts: []string{"acct_demo"}}}

// Stack is a running local stack. Close stops all of it.
type Stack struct {
	// URL is the gateway's base URL; SandboxURL the acquirer's.
	URL, SandboxURL string
	// TableName is the stack's table.
	TableName string
	// Sandbox is the stack's sandbox acquirer: nil when StackConfig.AcquirerURL
	// named another.
	Sandbox *sandbox.Server
	// The functions' execution environments: the charge function, the
	// consumer of the producers' queues, the consumer of the reconcile queue
	// (the same binary, reading only that queue), the sweeper, the
	// publisher of the outcome events (on the table's stream), the
	// operator's function and the daily match.
	Charge, Consumer, Reconciler, Sweeper, Publisher, Operator, Match *Pool
	// OperatorURL is the operator's channel: the operator function's URL,
	// with AWS_IAM auth (FunctionURL), as idemctl reaches the deployed one
	// (OPERATOR_URL). OperatorRegion is the region its signatures name,
	// and Operator the one principal it admits: the shell's credentials,
	// as the operator's role.
	OperatorURL, OperatorRegion string
	OperatorPrincipal           Principal
	// OutcomeTopicARN is the outcome events' topic; OutcomeQueues the queue
	// subscribed for each producer (filtered on its name), and for
	// event.ProducerHTTP, a merchant backend's.
	OutcomeTopicARN string
	OutcomeQueues   map[string]string
	// RegionName is what the functions call their region in the
	// multi-region table mode (empty in one region): cfg.Region, or the
	// SDK's.
	RegionName string
	// Unshaped says why a stack asked to shape its functions
	// (StackConfig.Shape) runs them on full cores: empty when it shapes
	// them, or was not asked to.
	Unshaped string
	// Queues are the producers' charge-commands queues by producer name;
	// QueueURL and QueueARN are the first producer's.
	Queues             map[string]command.Inbox
	QueueURL, QueueARN string
	// ReconcileURL and ReconcileARN are the sweeper's reconcile-commands
	// queue; DLQURL the dead-letter queue of all of them (what ran out of
	// receives), RejectedURL where the consumers put what they refuse.
	ReconcileURL, ReconcileARN string
	DLQURL, RejectedURL        string
	// Commands keeps, while it records, each producer's command's time from
	// its send to the end of the consumer invocation that handled it.
	Commands DurationLog
	SQS      *sqs.Client
	SNS      *sns.Client
	// DynamoDB is a client for the stack's table, built like the functions' own.
	DynamoDB *dynamodb.Client
	// Protocol is what the functions claim records under (T, the skew and
	// the acquirer's id), read from their environment as they read it.
	Protocol idem.Protocol

	outcomeARNs map[string]string // the outcome queues' ARNs, by subscriber

	mu            sync.Mutex // guards servers, listeners, reservations and sandboxServer
	servers       []*http.Server
	sandboxServer *http.Server
	// listeners are every listener the stack bound (a served one closes
	// with its server too); reservations keep their ports from the
	// emulators (reservePort) until Close.
	listeners    []net.Listener
	reservations []func()
	stopTriggers context.CancelFunc
	triggers     sync.WaitGroup // the event source mappings, the stream's and the schedule
}

// StopSandbox closes the sandbox acquirer's listener and connections: from
// then on the functions' acquirer calls are refused (nothing sent). It does
// nothing to an acquirer the stack did not start (AcquirerURL).
func (s *Stack) StopSandbox() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sandboxServer != nil {
		_ = s.sandboxServer.Close()
	}
}

// SandboxOutage takes the sandbox acquirer down for d: its listener and
// connections are closed, so every acquirer call begun in that time is
// refused before a connection is made (nothing sent); calls under way when
// it closes lose their connection (outcome unknown). Then it serves again,
// with its authorizations, on the same address: no emulator of this
// process is given its port meanwhile (reservePort), and the listen is
// retried for 5 s should another process hold it. Only a sandbox the
// stack started can have an outage.
func (s *Stack) SandboxOutage(d time.Duration) error {
	if s.Sandbox == nil {
		return errors.New("sandbox outage: the acquirer at AcquirerURL is not the stack's")
	}
	s.StopSandbox()
	time.Sleep(d)
	s.mu.Lock()
	defer s.mu.Unlock()
	addr := strings.TrimPrefix(s.SandboxURL, "http://")
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err = s.serveLocked(addr, s.Sandbox); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("sandbox back up: %w", err)
	}
	s.sandboxServer = s.servers[len(s.servers)-1]
	return nil
}

// StartStack binds the addresses it serves on (bindListeners), then
// creates the table (if missing) and starts everything. The DynamoDB
// endpoint comes from the SDK's standard variables.
func StartStack(ctx context.Context, cfg StackConfig) (_ *Stack, err error) {
	local := deploy.Local()
	cfg = cfg.withDefaults(local)
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	s := &Stack{TableName: cfg.TableName, DynamoDB: dynamo.NewClient(awsCfg, true)}
	if cfg.TableMode == deploy.MultiRegionStrong {
		s.RegionName = cmp.Or(cfg.Region, awsCfg.Region)
	}
	defer func() { // whatever started is stopped when the rest could not start
		if err != nil {
			s.Close()
		}
	}()
	own, err := s.bindListeners(cfg)
	if err != nil {
		return nil, err
	}
	if err := dynamo.CreateTable(ctx, s.DynamoDB, cfg.TableName, cfg.TableMode.TTL()); err != nil {
		return nil, err
	}
	s.startSandbox(cfg, own.sandbox)
	s.SQS, s.SNS = sqs.NewFromConfig(awsCfg), sns.NewFromConfig(awsCfg)
	if err := s.createQueues(ctx, cfg); err != nil {
		return nil, err
	}
	if err := s.createOutcomes(ctx, cfg); err != nil {
		return nil, err
	}
	streamARN, err := tableStream(ctx, s.DynamoDB, cfg.TableName)
	if err != nil {
		return nil, err
	}
	producers := s.producerQueues(cfg)
	if err := s.startFunctions(cfg, local, producers); err != nil {
		return nil, err
	}
	s.startTriggers(cfg, awsCfg, producers, streamARN)
	s.startGateway(cfg, own.gateway)
	if err := s.startOperatorChannel(ctx, cfg, awsCfg, own.operator); err != nil {
		return nil, err
	}
	return s, nil
}

// stackListeners are the listeners of the addresses a stack serves on;
// sandbox is nil when the stack starts no sandbox.
type stackListeners struct{ gateway, operator, sandbox net.Listener }

// bindListeners binds the addresses the stack serves on, before any
// emulator is given a port: the gateway's, the operator channel's and,
// unless cfg.AcquirerURL names the acquirer, the sandbox's. An emulator's
// ports are picked from the kernel's ephemeral range, where a port the
// caller chose may be; bound first, and reserved until Close (reservePort)
// so that none is picked while a sandbox outage has released its
// listener, none of them is given to an emulator.
func (s *Stack) bindListeners(cfg StackConfig) (l stackListeners, err error) {
	if l.gateway, err = s.listen(cfg.GatewayAddr); err != nil {
		return l, err
	}
	if l.operator, err = s.listen(cfg.OperatorAddr); err != nil {
		return l, err
	}
	if cfg.AcquirerURL == "" {
		l.sandbox, err = s.listen(cfg.SandboxAddr)
	}
	return l, err
}

// LocalAccount is the account the local stack's ARNs name.
const LocalAccount = "000000000000"

// startOperatorChannel serves the operator function behind a FunctionURL
// on l, cfg.OperatorAddr's listener. Its one admitted principal is the
// operator's role, whose credentials locally are the shell's (the SDK's,
// as idemctl's are): arn:aws:iam::000000000000:role/<prefix>-operator,
// the session named after the access key. cfg.Principals are known and
// refused.
func (s *Stack) startOperatorChannel(ctx context.Context, cfg StackConfig, awsCfg aws.Config, l net.Listener) error {
	creds, err := awsCfg.Credentials.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("the operator's local credentials (the SDK's): %w", err)
	}
	role := cfg.names().Prefix + "-operator"
	s.OperatorPrincipal = Principal{
		AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey, AccountID: LocalAccount,
		ARN:     "arn:aws:iam::" + LocalAccount + ":role/" + role,
		UserARN: "arn:aws:sts::" + LocalAccount + ":assumed-role/" + role + "/" + creds.AccessKeyID,
		UserID:  "AROALOCALOPERATOR:" + creds.AccessKeyID,
	}
	s.OperatorRegion = cmp.Or(cfg.Region, awsCfg.Region)
	url := &FunctionURL{
		Target: s.Operator, Region: s.OperatorRegion, Allowed: s.OperatorPrincipal.ARN, AccountID: LocalAccount,
		Principals: append([]Principal{s.OperatorPrincipal}, cfg.Principals...),
	}
	s.OperatorURL = s.serve(l, url) + "/"
	return nil
}

// names are the stack's queue and topic names: after its table, and its
// region when it has one.
func (cfg StackConfig) names() deploy.Names {
	if cfg.Region == "" {
		return deploy.Names{Prefix: cfg.TableName}
	}
	return deploy.Names{Prefix: cfg.TableName + "-" + cfg.Region}
}

// withDefaults is cfg with at least 2 instances, the operator's channel on
// a port of its own, local's sweep interval,
// visibility timeout and receives where unset, DefaultProducers when it
// names none, SandboxAcquirerID when it names no acquirer id and local's
// table mode when it names none.
func (cfg StackConfig) withDefaults(local deploy.Description) StackConfig {
	if cfg.Instances < 2 {
		cfg.Instances = 2
	}
	if cfg.OperatorAddr == "" {
		cfg.OperatorAddr = "127.0.0.1:0"
	}
	if cfg.SweepInterval == 0 {
		cfg.SweepInterval = local.SweepInterval
	}
	if cfg.MatchInterval == 0 {
		cfg.MatchInterval = local.Match.Every
	}
	if cfg.VisibilityTimeout <= 0 {
		cfg.VisibilityTimeout = local.Queues.Visibility
	}
	if cfg.MaxReceives <= 0 {
		cfg.MaxReceives = local.Queues.MaxReceives
	}
	if len(cfg.Producers) == 0 {
		cfg.Producers = DefaultProducers
	}
	if cfg.AcquirerID == "" {
		cfg.AcquirerID = SandboxAcquirerID
	}
	if cfg.TableMode == "" {
		cfg.TableMode = local.Table
	}
	return cfg
}

// startSandbox serves the stack's own sandbox acquirer on l,
// cfg.SandboxAddr's listener, unless cfg.AcquirerURL names the acquirer;
// either way s.SandboxURL is then the acquirer's URL.
func (s *Stack) startSandbox(cfg StackConfig, l net.Listener) {
	if s.SandboxURL = cfg.AcquirerURL; s.SandboxURL != "" {
		return
	}
	s.Sandbox = sandbox.New("")
	s.SandboxURL = s.serve(l, s.Sandbox)
	s.sandboxServer = s.servers[len(s.servers)-1] // no other goroutine yet
}

// producerQueues is the producers' charge-commands queues, in cfg's order.
func (s *Stack) producerQueues(cfg StackConfig) []command.Inbox {
	var producers []command.Inbox
	for _, p := range cfg.Producers {
		producers = append(producers, s.Queues[p.Name])
	}
	return producers
}

// startFunctions starts the functions' pools: the charge function, the
// consumer of the producers' queues, the reconciler of the reconcile
// queue, the sweeper and the publisher. Each gets the stack's environment
// (functionsEnv), then its own, then cfg.Env.
func (s *Stack) startFunctions(cfg StackConfig, local deploy.Description, producers []command.Inbox) (err error) {
	consumerSources, err := command.EncodeInboxes(producers)
	if err != nil {
		return err
	}
	reconcileSources, err := command.EncodeInboxes([]command.Inbox{{ARN: s.ReconcileARN, URL: s.ReconcileURL, Reconcile: true}})
	if err != nil {
		return err
	}
	base, err := s.functionsEnv(cfg)
	if err != nil {
		return err
	}
	shape := cfg.Shape
	if err := cgroup.Available(); shape && err != nil {
		s.Unshaped, shape = err.Error(), false
	}
	// start runs instances of the function named name (deploy.Local),
	// with its timeout unless cfg sets one for every function, shaped by
	// its memory size when asked.
	start := func(name string, instances int, env ...string) (*Pool, error) {
		fn := local.Function(name)
		memory := 0
		if shape {
			memory = cmp.Or(cfg.MemoryMB, fn.MemoryMB)
		}
		return StartPool(PoolConfig{
			RIE: cfg.RIE, Bootstrap: filepath.Join(cfg.BinDir, fn.Binary, "bootstrap"), Name: fn.Name,
			Instances: instances, Timeout: timeout(cfg.Timeout, fn.Timeout), Env: slices.Concat(base, env, cfg.Env), Output: cfg.Output,
			MemoryMB: memory, MemoryOnly: cfg.MemoryOnly,
		})
	}
	if s.Charge, err = start(deploy.FunctionCharge, cfg.Instances); err != nil {
		return err
	}
	if s.Consumer, err = start(deploy.FunctionConsumer, cfg.Instances, deploy.EnvCommandSources+"="+consumerSources, deploy.EnvRejectedQueueURL+"="+s.RejectedURL); err != nil {
		return err
	}
	if s.Reconciler, err = start(deploy.FunctionReconciler, cfg.Instances, deploy.EnvCommandSources+"="+reconcileSources, deploy.EnvRejectedQueueURL+"="+s.RejectedURL); err != nil {
		return err
	}
	if s.Sweeper, err = start(deploy.FunctionSweeper, 1, deploy.EnvReconcileQueueURL+"="+s.ReconcileURL); err != nil {
		return err
	}
	if s.Publisher, err = start(deploy.FunctionPublisher, 1); err != nil {
		return err
	}
	if s.Operator, err = start(deploy.FunctionOperator, 1); err != nil {
		return err
	}
	s.Match, err = start(deploy.FunctionMatch, 1, deploy.EnvMatchGrace+"="+local.Match.Grace.String(), fmt.Sprintf("%s=%t", deploy.EnvMatchToday, local.Match.Today))
	return err
}

// functionsEnv is the environment every function starts from: the table,
// the acquirer (its URL, id and any API key) and the outcome topic, with
// DYNAMODB_SKIP_RESPONSE_CRC32. It sets s.Protocol from that environment
// and cfg.Env, read as the functions read it.
func (s *Stack) functionsEnv(cfg StackConfig) ([]string, error) {
	base := []string{
		deploy.EnvTableName + "=" + cfg.TableName, deploy.EnvAcquirerURL + "=" + s.SandboxURL, deploy.EnvAcquirerID + "=" + cfg.AcquirerID,
		deploy.EnvSkipResponseCRC32 + "=true", deploy.EnvOutcomeTopicARN + "=" + s.OutcomeTopicARN, deploy.EnvTableMode + "=" + string(cfg.TableMode),
	}
	if cfg.AcquirerAPIKey != "" {
		base = append(base, deploy.EnvAcquirerAPIKey+"="+cfg.AcquirerAPIKey)
	}
	if s.RegionName != "" {
		base = append(base, deploy.EnvLocalRegion+"="+s.RegionName)
	}
	functions, err := charging.FromEnv(envOf(slices.Concat(base, cfg.Env)))
	if err != nil {
		return nil, fmt.Errorf("the functions' environment: %w", err)
	}
	s.Protocol = idem.Protocol{InTransitBound: functions.InTransitBound, ClockSkew: functions.ClockSkew, Downstream: functions.AcquirerID}
	return base, nil
}

// startTriggers starts what invokes the functions on its own, until Close:
// unless cfg.NoEventSourceMapping, an event source mapping from each
// producer's queue to the consumer and from the reconcile queue to the
// reconciler; unless cfg.NoStreamMapping, the table's stream (streamARN)
// to the publisher, filtered as the region's trigger is
// (streamfilter.For); and,
// when cfg.SweepInterval is positive, the sweeper's schedule, and when
// cfg.MatchInterval is, the match's.
func (s *Stack) startTriggers(cfg StackConfig, awsCfg aws.Config, producers []command.Inbox, streamARN string) {
	triggers, stop := context.WithCancel(context.Background())
	s.stopTriggers = stop
	if !cfg.NoEventSourceMapping {
		for _, q := range producers {
			s.triggers.Go(func() { eventSourceMapping(triggers, s.SQS, q.URL, q.ARN, s.Consumer, &s.Commands) })
		}
		s.triggers.Go(func() { eventSourceMapping(triggers, s.SQS, s.ReconcileURL, s.ReconcileARN, s.Reconciler, nil) })
	}
	if !cfg.NoStreamMapping {
		streams := dynamodbstreams.NewFromConfig(awsCfg)
		filters := streamfilter.For(s.RegionName)
		s.triggers.Go(func() { streamMapping(triggers, streams, streamARN, filters, s.Publisher) })
	}
	if cfg.SweepInterval > 0 {
		s.triggers.Go(func() { schedule(triggers, cfg.SweepInterval, s.Sweeper) })
	}
	if cfg.MatchInterval > 0 {
		s.triggers.Go(func() { schedule(triggers, cfg.MatchInterval, s.Match) })
	}
}

// startGateway serves the gateway on l, cfg.GatewayAddr's listener: every
// route to the charge function, its bearer tokens checked against
// cfg.Trust. s.URL is its base URL.
func (s *Stack) startGateway(cfg StackConfig, l net.Listener) {
	gw := &Gateway{Trust: cfg.Trust}
	for _, key := range route.All {
		gw.Routes = append(gw.Routes, Route{Key: key, Target: s.Charge, Scope: route.Scopes[key]})
	}
	for _, key := range route.Public {
		gw.Routes = append(gw.Routes, Route{Key: key, Target: s.Charge, Public: true})
	}
	s.URL = s.serve(l, gw)
}

// timeout is override when positive, else the function's own.
func timeout(override, own time.Duration) time.Duration {
	if override > 0 {
		return override
	}
	return own
}

// envOf reads a list of NAME=value as getenv does; a later entry wins, as
// in a process's environment built from it.
func envOf(env []string) func(string) string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

// listen binds addr for a server of the stack's and reserves its port
// (reservePort) until Close.
func (s *Stack) listen(addr string) (net.Listener, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listenLocked(addr)
}

func (s *Stack) listenLocked(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	s.listeners = append(s.listeners, l)
	s.reservations = append(s.reservations, reservePort(l.Addr().(*net.TCPAddr).Port))
	return l, nil
}

// serve serves h on l, one of the stack's listeners, until Close, and
// returns its base URL.
func (s *Stack) serve(l net.Listener, h http.Handler) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serveOnLocked(l, h)
}

// serveLocked binds addr and serves h there.
func (s *Stack) serveLocked(addr string, h http.Handler) (string, error) {
	l, err := s.listenLocked(addr)
	if err != nil {
		return "", err
	}
	return s.serveOnLocked(l, h), nil
}

func (s *Stack) serveOnLocked(l net.Listener, h http.Handler) string {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	s.servers = append(s.servers, srv)
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	return "http://" + l.Addr().String()
}

// createQueues makes the dead-letter queue, the rejected-commands queue, one charge-commands queue per
// producer and the reconcile-commands queue, each redriven to the DLQ
// after cfg.MaxReceives receives. fauxqs enforces no queue policy: here the
// binding rests on each queue's eventSourceARN alone, which the local event
// source mapping sets as Lambda's does (the CDK app adds the policies).
func (s *Stack) createQueues(ctx context.Context, cfg StackConfig) error {
	names := cfg.names()
	dlqURL, dlqARN, err := createQueue(ctx, s.SQS, names.DLQ(), cfg.VisibilityTimeout, "", 0)
	if err != nil {
		return err
	}
	s.DLQURL = dlqURL
	if s.RejectedURL, _, err = createQueue(ctx, s.SQS, names.Rejected(), cfg.VisibilityTimeout, "", 0); err != nil {
		return err
	}
	s.Queues = map[string]command.Inbox{}
	for i, p := range cfg.Producers {
		url, arn, err := createQueue(ctx, s.SQS, names.Charges(p.Name), cfg.VisibilityTimeout, dlqARN, cfg.MaxReceives)
		if err != nil {
			return err
		}
		s.Queues[p.Name] = command.Inbox{ARN: arn, URL: url, Producer: p.Name, Accounts: p.Accounts}
		if i == 0 {
			s.QueueURL, s.QueueARN = url, arn
		}
	}
	s.ReconcileURL, s.ReconcileARN, err = createQueue(ctx, s.SQS, names.Reconcile(), cfg.VisibilityTimeout, dlqARN, cfg.MaxReceives)
	return err
}

// createOutcomes makes the outcome topic and, for each producer and for
// event.ProducerHTTP, an outcome queue subscribed to it with the filter
// policy the CDK app deploys (event.FilterPolicy) and raw delivery, so a
// queue's message is the event itself. fauxqs honours the policy; it
// enforces no queue policy (the CDK app adds those).
func (s *Stack) createOutcomes(ctx context.Context, cfg StackConfig) error {
	names := cfg.names()
	t, err := s.SNS.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(names.Outcomes())})
	if err != nil {
		return fmt.Errorf("create topic %s: %w", names.Outcomes(), err)
	}
	s.OutcomeTopicARN = aws.ToString(t.TopicArn)
	s.OutcomeQueues, s.outcomeARNs = map[string]string{}, map[string]string{}
	var producers []string
	for _, p := range cfg.Producers {
		producers = append(producers, p.Name)
	}
	for _, p := range event.Subscribers(producers...) {
		url, arn, err := createQueue(ctx, s.SQS, names.Outcome(p), cfg.VisibilityTimeout, "", 0)
		if err != nil {
			return err
		}
		s.OutcomeQueues[p], s.outcomeARNs[p] = url, arn
	}
	return s.subscribe(ctx, s.OutcomeTopicARN)
}

// SubscribeTo subscribes the stack's outcome queues to the outcome topic
// of other, a stack of another region, as the multi-region mode deploys
// them: each region publishes a row's event once, to its own topic, and
// every region's queue of its subscriber receives it.
func (s *Stack) SubscribeTo(ctx context.Context, other *Stack) error {
	return s.subscribe(ctx, other.OutcomeTopicARN)
}

// subscribe subscribes each outcome queue to topicARN with its
// subscriber's filter policy (event.FilterPolicy) and raw delivery.
func (s *Stack) subscribe(ctx context.Context, topicARN string) error {
	for p, arn := range s.outcomeARNs {
		if _, err := s.SNS.Subscribe(ctx, &sns.SubscribeInput{
			TopicArn: aws.String(topicARN), Protocol: aws.String("sqs"), Endpoint: aws.String(arn), ReturnSubscriptionArn: true,
			Attributes: map[string]string{"FilterPolicy": event.FilterPolicy(p), "RawMessageDelivery": "true"},
		}); err != nil {
			return fmt.Errorf("subscribe %s to %s: %w", arn, topicARN, err)
		}
	}
	return nil
}

// tableStream is the table's stream ARN; a table created before it had
// one gets it.
func tableStream(ctx context.Context, ddb *dynamodb.Client, table string) (string, error) {
	d, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return "", fmt.Errorf("describe table %s: %w", table, err)
	}
	if d.Table.StreamSpecification == nil || !aws.ToBool(d.Table.StreamSpecification.StreamEnabled) {
		u, err := ddb.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table), StreamSpecification: dynamo.TableInput(table).StreamSpecification})
		if err != nil {
			return "", fmt.Errorf("enable the stream of %s: %w", table, err)
		}
		return aws.ToString(u.TableDescription.LatestStreamArn), nil
	}
	return aws.ToString(d.Table.LatestStreamArn), nil
}

// Sweep invokes the sweeper once, now, and returns its report.
func (s *Stack) Sweep(ctx context.Context) (scheduled.Report, error) {
	out, err := s.Sweeper.Invoke(ctx, scheduledEvent())
	if err != nil {
		return scheduled.Report{}, err
	}
	var r scheduled.Report
	if err := json.Unmarshal(out, &r); err != nil {
		return scheduled.Report{}, fmt.Errorf("sweeper answered %s", out)
	}
	return r, nil
}

// RunMatch invokes the match once, now, and returns its summary of each
// day it matched.
func (s *Stack) RunMatch(ctx context.Context) ([]match.Summary, error) {
	out, err := s.Match.Invoke(ctx, scheduledEvent())
	if err != nil {
		return nil, err
	}
	var sums []match.Summary
	if err := json.Unmarshal(out, &sums); err != nil {
		return nil, fmt.Errorf("the match answered %s", out)
	}
	return sums, nil
}

// Close stops the triggers, the gateway, the functions and the sandbox,
// and returns once none of them runs; their ports are then no longer
// reserved.
func (s *Stack) Close() {
	if s.stopTriggers != nil {
		s.stopTriggers()
	}
	s.mu.Lock()
	for _, srv := range s.servers {
		_ = srv.Close()
	}
	for _, l := range s.listeners {
		_ = l.Close() // closed already when served
	}
	for _, p := range []*Pool{s.Charge, s.Consumer, s.Reconciler, s.Sweeper, s.Publisher, s.Operator, s.Match} {
		if p != nil {
			p.Close()
		}
	}
	for _, release := range s.reservations {
		release()
	}
	s.mu.Unlock()
	s.triggers.Wait()
}
