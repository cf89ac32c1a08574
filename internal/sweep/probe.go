package sweep

import (
	"context"
	"fmt"
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// ProbeTimeout bounds Probe's read: a table that has not answered by then
// counts as not answering, and the run goes on to its sweep.
const ProbeTimeout = 5 * time.Second

// Probe makes one strongly consistent read of the table, of a key no
// record ever has (idem.Probe: the read the health route makes too,
// charge.Service.Healthy), and returns nil when the table answered, the
// key not found, or the error when it did not answer within ProbeTimeout.
// It reads no account's data and writes nothing. The sweeper records its
// answer every run (obs.MetricTableProbe), and the region's Route 53 health
// check reads that metric through an alarm: the deployment's own probe,
// which no caller of the API can slow down or turn into errors.
func (s *Sweeper) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	if err := idem.Probe(ctx, s.store, s.cfg.Now()); err != nil {
		return fmt.Errorf("table probe: %w", err)
	}
	return nil
}
