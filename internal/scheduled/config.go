package scheduled

import (
	"time"

	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/setup"
)

// Config is the sweeper's environment.
type Config struct {
	TableName      string        // TABLE_NAME (required)
	QueueURL       string        // RECONCILE_QUEUE_URL (required): where reconcile commands go
	InTransitBound time.Duration // IN_TRANSIT_BOUND, as the charge functions'
	ClockSkew      time.Duration // CLOCK_SKEW, as the charge functions'
	Environment    string        // ENVIRONMENT, the metrics' dimension ("local")
	// DYNAMODB_SKIP_RESPONSE_CRC32, as the charge functions'
	SkipResponseCRC32 bool
	// PurgeWindow is PURGE_WINDOW (deploy's PurgeWindow) when
	// TABLE_MODE names a mode without TTL, and zero (no purge) when the
	// table deletes by TTL.
	PurgeWindow time.Duration
	// In the multi-region mode (TABLE_MODE), the sweeper beats its region's
	// heartbeat and takes over the events of regions that stopped
	// (backstop.Publisher): Region (setup.RegionOf), the outcome topic
	// (OUTCOME_TOPIC_ARN, required) and StaleRegion (STALE_REGION,
	// deploy's StaleRegion). All empty in one region.
	Region, TopicARN string
	StaleRegion      time.Duration
}

// ConfigFromEnv reads Config with getenv.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	var c Config
	var err error
	if c.TableName, err = setup.Require(getenv, deploy.EnvTableName); err != nil {
		return Config{}, err
	}
	if c.QueueURL, err = setup.Require(getenv, deploy.EnvReconcileQueueURL); err != nil {
		return Config{}, err
	}
	if c.InTransitBound, err = setup.Duration(getenv, deploy.EnvInTransitBound, idem.DefaultInTransitBound); err != nil {
		return Config{}, err
	}
	if c.ClockSkew, err = setup.Duration(getenv, deploy.EnvClockSkew, idem.DefaultClockSkew); err != nil {
		return Config{}, err
	}
	c.Environment = setup.EnvironmentOf(getenv)
	if c.SkipResponseCRC32, err = setup.Boolean(getenv, deploy.EnvSkipResponseCRC32); err != nil {
		return Config{}, err
	}
	mode, err := setup.TableModeOf(getenv)
	if err != nil {
		return Config{}, err
	}
	if !mode.TTL() {
		if c.PurgeWindow, err = setup.Duration(getenv, deploy.EnvPurgeWindow, deploy.Deployed().PurgeWindow); err != nil {
			return Config{}, err
		}
	}
	if mode != deploy.MultiRegionStrong {
		return c, nil
	}
	if c.Region, err = setup.RegionOf(getenv); err != nil {
		return Config{}, err
	}
	if c.TopicARN, err = setup.Require(getenv, deploy.EnvOutcomeTopicARN); err != nil {
		return Config{}, err
	}
	if c.StaleRegion, err = setup.Duration(getenv, deploy.EnvStaleRegion, deploy.Deployed().StaleRegion); err != nil {
		return Config{}, err
	}
	return c, nil
}
