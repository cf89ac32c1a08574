package deploy_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/queue"
)

// TestProtocolIsTheCodes: the deployed protocol times are the engine's
// and the charge service's compiled defaults, which they use when a
// setting is absent.
func TestProtocolIsTheCodes(t *testing.T) {
	got := deploy.Deployed().Protocol
	want := deploy.Protocol{
		InTransitBound: idem.DefaultInTransitBound, ClockSkew: idem.DefaultClockSkew, AcquirerTimeout: charge.DefaultAcquirerTimeout,
		LeaseMargin: idem.DefaultLeaseMargin, Retention: idem.DefaultRetention,
	}
	if got != want {
		t.Fatalf("deployed protocol %+v, the code's defaults %+v", got, want)
	}
	if got.AcquirerTimeout >= got.InTransitBound {
		t.Fatalf("the acquirer timeout %s must be below T %s", got.AcquirerTimeout, got.InTransitBound)
	}
}

// TestRedriveArithmetic holds the redrive of docs/queues.md, deployed and
// local: a command can wait out the owner's lease and one reconcile cycle,
// resolve, and still have receives for transient failures; each wait fits
// in SQS's visibility limit; and the whole of it fits in the queue's
// retention.
func TestRedriveArithmetic(t *testing.T) {
	for name, c := range map[string]struct {
		d           deploy.Description
		hide, worst time.Duration
	}{
		"deployed": {deploy.Deployed(), 46 * time.Second, 17*time.Minute + 4*time.Second},
		"local":    {deploy.Local(), 26 * time.Second, 5*time.Minute + 44*time.Second},
	} {
		d := c.d
		if d.Queues.MaxReceives < deploy.InFlightReceives+deploy.ChargeReceives+deploy.ResolveReceives+1 || deploy.TransientReceives < 1 || deploy.InFlightReceives < 2 {
			t.Fatalf("%s: %d receives leave none for a transient failure after %d in flight", name, d.Queues.MaxReceives, deploy.InFlightReceives)
		}
		if hide := d.HiddenInFlight(); hide > queue.MaxDelay {
			t.Fatalf("%s: an in-flight command is hidden %s, past the %s SQS allows", name, hide, queue.MaxDelay)
		}
		if retention := 4 * 24 * time.Hour; d.WorstRedrive() > retention { // SQS's default, which the queues keep
			t.Fatalf("%s: a command may need %s, past the queue's retention %s", name, d.WorstRedrive(), retention)
		}
		if d.HiddenInFlight() != c.hide || d.Queues.MaxReceives != 8 || d.WorstRedrive() != c.worst {
			t.Fatalf("%s: hidden %s, %d receives, worst %s: update the redrive arithmetic in docs/queues.md", name, d.HiddenInFlight(), d.Queues.MaxReceives, d.WorstRedrive())
		}
	}
}

// TestLocalDiffersOnlyByItsOverrides: Local is Deployed but for the
// function timeouts, the queues' visibility and the match's schedule, the
// three overrides it names.
func TestLocalDiffersOnlyByItsOverrides(t *testing.T) {
	local, deployed := deploy.Local(), deploy.Deployed()
	if len(deployed.Overrides) != 0 || len(local.Overrides) != 3 {
		t.Fatalf("overrides: deployed %v, local %v", deployed.Overrides, local.Overrides)
	}
	for i := range local.Functions {
		if local.Functions[i].Timeout != 10*time.Second {
			t.Fatalf("local %s timeout %s", local.Functions[i].Name, local.Functions[i].Timeout)
		}
		local.Functions[i].Timeout = deployed.Functions[i].Timeout
	}
	local.Queues.Visibility, local.Match, local.Overrides = deployed.Queues.Visibility, deployed.Match, nil
	if !reflect.DeepEqual(local, deployed) {
		t.Fatalf("local differs from deployed beyond its overrides:\n%+v\n%+v", local, deployed)
	}
}

// TestTableModes: a single region's table deletes by TTL, a strongly
// consistent global one cannot; everything a region runs is regional,
// and only the table changes scope with the mode.
func TestTableModes(t *testing.T) {
	if !deploy.SingleRegion.TTL() || deploy.MultiRegionStrong.TTL() {
		t.Fatal("TTL: single region on, multi-region strong off")
	}
	single, multi := deploy.SingleRegion.Scopes(), deploy.MultiRegionStrong.Scopes()
	for r, s := range single {
		want := s
		if r == deploy.ResourceTable {
			want = deploy.Global
		}
		if multi[r] != want {
			t.Errorf("%s: %s in a single region, %s in multi-region strong", r, s, multi[r])
		}
	}
	if single[deploy.ResourceTable] != deploy.Regional || single[deploy.ResourceDomain] != deploy.Global {
		t.Errorf("single region: %v", single)
	}
	if deploy.Deployed().Table != deploy.SingleRegion || deploy.Local().Table != deploy.SingleRegion {
		t.Error("the deployment runs in one region")
	}
}

// TestDeployedValues pins the documented values (docs/design.md,
// docs/queues.md): a change to any of them is a change to the contract.
func TestDeployedValues(t *testing.T) {
	d := deploy.Deployed()
	want := deploy.Protocol{InTransitBound: 5 * time.Second, ClockSkew: time.Second, AcquirerTimeout: 3 * time.Second,
		LeaseMargin: 10 * time.Second, Retention: 90 * 24 * time.Hour}
	if d.Protocol != want || d.Queues.Visibility != 180*time.Second || d.Queues.MaxReceives != 8 || deploy.DefaultAccountClaim != "sub" || d.StaleRegion != 3*time.Minute {
		t.Fatalf("deployed %+v", d)
	}
	if !deploy.ValidMemory(128) || !deploy.ValidMemory(10240) || deploy.ValidMemory(127) || deploy.ValidMemory(10241) {
		t.Error("Lambda's memory sizes are 128 to 10,240 MB")
	}
	sizes := map[string]int{deploy.FunctionCharge: 256, deploy.FunctionConsumer: 128, deploy.FunctionReconciler: 128, deploy.FunctionSweeper: 512, deploy.FunctionPublisher: 512, deploy.FunctionOperator: 128, deploy.FunctionMatch: 1024}
	for _, f := range d.Functions {
		if f.MemoryMB != sizes[f.Name] {
			t.Errorf("%s: %d MB, want %d (docs/measurements.md)", f.Name, f.MemoryMB, sizes[f.Name])
		}
	}
}

// TestMetricFunctions: the metrics' Function dimension (obs.Function*) is
// a deployed function's binary, one value per binary: the consumer and the
// reconciler share sqsconsumer's, as their alarms do.
func TestMetricFunctions(t *testing.T) {
	binaries := map[string]bool{}
	for _, f := range deploy.Deployed().Functions {
		binaries[f.Binary] = true
	}
	dims := map[string]bool{obs.FunctionCharge: true, obs.FunctionSQSConsumer: true, obs.FunctionSweeper: true, obs.FunctionPublisher: true, obs.FunctionOperator: true, obs.FunctionMatch: true}
	if !reflect.DeepEqual(binaries, dims) {
		t.Fatalf("the functions' binaries are %v, the metrics' Function values %v", binaries, dims)
	}
}
