package main

import (
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/setup"
)

// config is the publisher's environment.
type config struct {
	TopicARN    string // OUTCOME_TOPIC_ARN (required)
	Environment string // ENVIRONMENT, the metrics' dimension ("local")
	// TableName (TABLE_NAME), in the multi-region mode (TABLE_MODE), is
	// the table whose rows it marks published (publish.Handler.Books);
	// empty in one region.
	TableName string
	// DYNAMODB_SKIP_RESPONSE_CRC32, as the charge functions'
	SkipResponseCRC32 bool
}

// configFromEnv reads config with getenv.
func configFromEnv(getenv func(string) string) (config, error) {
	c := config{Environment: setup.EnvironmentOf(getenv)}
	var err error
	if c.TopicARN, err = setup.Require(getenv, deploy.EnvOutcomeTopicARN); err != nil {
		return config{}, err
	}
	mode, err := setup.TableModeOf(getenv)
	if err != nil || mode != deploy.MultiRegionStrong {
		return c, err
	}
	if c.TableName, err = setup.Require(getenv, deploy.EnvTableName); err != nil {
		return config{}, err
	}
	if c.SkipResponseCRC32, err = setup.Boolean(getenv, deploy.EnvSkipResponseCRC32); err != nil {
		return config{}, err
	}
	return c, nil
}
