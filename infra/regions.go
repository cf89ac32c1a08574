package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/idempotent-payments/idempay/internal/deploy"
)

// deployedTable is the table mode each environment deploys today. The mode
// is chosen when an environment's table is created and never changes:
// multi-region strong consistency needs an empty table, and its table is
// another CloudFormation resource (AWS::DynamoDB::GlobalTable, not
// AWS::DynamoDB::Table), so switching would replace a retained,
// deletion-protected table that holds the ledger. Synthesis refuses an
// environment here in another mode. Once global is deployed, it is added
// here as multi-region, and synthesis then refuses turning it single-region
// as well.
var deployedTable = map[string]deploy.TableMode{
	"dev": deploy.SingleRegion, "staging": deploy.SingleRegion, "prod": deploy.SingleRegion,
}

// multiRegionOnly are the environments defined multi-region: they require
// the region inputs and the domain inputs.
var multiRegionOnly = map[string]bool{"global": true}

// mrscRegionSets are the region sets of multi-region strong consistency,
// from the CloudFormation reference "AWS::DynamoDB::GlobalTable
// GlobalTableWitness": the replicas and the witness of one table are all in
// one set, the witness in a region of its own.
var mrscRegionSets = map[string][]string{
	"US": {"us-east-1", "us-east-2", "us-west-2"},
	"EU": {"eu-west-1", "eu-west-2", "eu-west-3", "eu-central-1"},
	"AP": {"ap-northeast-1", "ap-northeast-2", "ap-northeast-3"},
}

// mrscSetOf is the name of the region set region is in, or "".
func mrscSetOf(region string) string {
	for name, regions := range mrscRegionSets {
		if slices.Contains(regions, region) {
			return name
		}
	}
	return ""
}

// The table consistencies the input tableConsistency names.
const (
	consistencyStrong   = "strong"
	consistencyEventual = "eventual"
)

// errEventual says why the table is never multi-region eventually
// consistent.
var errEventual = fmt.Errorf("input %s=%s is refused: with eventual consistency (MREC) a conditional write is evaluated in one region only, "+
	"so two regions can both claim the same idempotency key and both charge, and the downstream key mixes in the claim time, "+
	"so the acquirer cannot deduplicate the two charges either; the multi-region mode is strongly consistent (MRSC) or nothing",
	InputTableConsistency, consistencyEventual)

// readRegions reads where the environment runs: the input regions, or,
// without it, the one region of the input region. More than one region is
// the multi-region mode, which also takes the witness, the consistency and
// the domain inputs; an environment keeps the mode it deploys today
// (deployedTable), and a multi-region-only one (multiRegionOnly) has no
// other.
func (c *Config) readRegions(input func(string) string) error {
	key := InputRegion
	if v := input(InputRegions); v != "" {
		key = InputRegions
		for _, r := range strings.Split(v, ",") {
			c.Regions = append(c.Regions, strings.TrimSpace(r))
		}
	} else {
		c.Regions = []string{input(InputRegion)}
	}
	for _, r := range c.Regions {
		switch {
		case !awsRegion.MatchString(r) && key == InputRegion:
			return fmt.Errorf("input %s=%q: want an AWS region such as sa-east-1 (or CDK_DEFAULT_REGION)", InputRegion, r)
		case !awsRegion.MatchString(r):
			return fmt.Errorf("input %s: %q is not an AWS region such as us-east-1", InputRegions, r)
		}
	}
	c.Region, c.WitnessRegion, c.Table = c.Regions[0], input(InputWitnessRegion), deploy.SingleRegion
	if len(c.Regions) > 1 {
		c.Table = deploy.MultiRegionStrong
	}
	if err := c.checkMode(input(InputTableConsistency)); err != nil {
		return err
	}
	if c.Table == deploy.SingleRegion {
		return c.noMultiRegionInputs(input)
	}
	if err := c.checkRegionSet(); err != nil {
		return err
	}
	return c.readDomain(input)
}

// checkMode refuses eventual consistency, an environment in another mode
// than it deploys today, and a multi-region-only environment in one
// region.
func (c Config) checkMode(consistency string) error {
	switch {
	case consistency == consistencyEventual:
		return errEventual
	case consistency != "" && consistency != consistencyStrong:
		return fmt.Errorf("input %s=%q: want %s (the default with more than one region)", InputTableConsistency, consistency, consistencyStrong)
	}
	if deployed, ok := deployedTable[c.Name]; ok && deployed != c.Table {
		return fmt.Errorf("its table is %s (deployedTable) and cannot become %s: the mode is chosen when the table is created "+
			"(multi-region strong consistency needs an empty table, and its table is another CloudFormation resource, "+
			"AWS::DynamoDB::GlobalTable), so switching would replace the retained, deletion-protected table that holds the ledger; "+
			"create a new environment in that mode instead (docs/deploying.md, multi-region mode)", deployed, c.Table)
	}
	if multiRegionOnly[c.Name] && c.Table != deploy.MultiRegionStrong {
		return fmt.Errorf("the environment is multi-region: give input %s (two regions and input %s, or three regions)", InputRegions, InputWitnessRegion)
	}
	if consistency != "" && c.Table == deploy.SingleRegion {
		return fmt.Errorf("input %s applies to more than one region", InputTableConsistency)
	}
	return nil
}

// noMultiRegionInputs refuses the multi-region mode's inputs in one
// region, where nothing would read them.
func (c Config) noMultiRegionInputs(input func(string) string) error {
	for _, key := range []string{InputWitnessRegion, InputDomainName, InputHostedZoneID, InputHostedZoneName} {
		if input(key) != "" {
			return fmt.Errorf("input %s applies to the multi-region mode only (input %s with more than one region)", key, InputRegions)
		}
	}
	return nil
}

// checkRegionSet: three replicas, or two and a witness; every region
// named once, the witness none of the replicas; all in one region set of
// multi-region strong consistency.
func (c Config) checkRegionSet() error {
	switch n, w := len(c.Regions), c.WitnessRegion != ""; {
	case n == 3 && w:
		return fmt.Errorf("input %s: three replicas take no witness (input %s): multi-region strong consistency has exactly three replicas, or two and a witness", InputRegions, InputWitnessRegion)
	case n == 2 && !w:
		return fmt.Errorf("input %s: two replicas need a witness (input %s): multi-region strong consistency has exactly three replicas, or two and a witness", InputRegions, InputWitnessRegion)
	case n != 2 && n != 3:
		return fmt.Errorf("input %s: %d regions: multi-region strong consistency has exactly three replicas, or two and a witness", InputRegions, n)
	}
	all := slices.Clone(c.Regions)
	if c.WitnessRegion != "" {
		if !awsRegion.MatchString(c.WitnessRegion) {
			return fmt.Errorf("input %s=%q: want an AWS region such as us-west-2", InputWitnessRegion, c.WitnessRegion)
		}
		if slices.Contains(c.Regions, c.WitnessRegion) {
			return fmt.Errorf("input %s=%s is also a replica: the witness is in a region of its own", InputWitnessRegion, c.WitnessRegion)
		}
		all = append(all, c.WitnessRegion)
	}
	for i, r := range c.Regions {
		if slices.Contains(c.Regions[:i], r) {
			return fmt.Errorf("input %s: region %s is named twice", InputRegions, r)
		}
	}
	set := mrscSetOf(all[0])
	for _, r := range all {
		switch s := mrscSetOf(r); {
		case s == "":
			return fmt.Errorf("region %s is in no region set of multi-region strong consistency (%s)", r, describeRegionSets())
		case s != set:
			return fmt.Errorf("regions %s: not all in one region set of multi-region strong consistency (%s)", strings.Join(all, ", "), describeRegionSets())
		}
	}
	return nil
}

// describeRegionSets lists the region sets, for an error.
func describeRegionSets() string {
	var sets []string
	for _, name := range []string{"US", "EU", "AP"} {
		sets = append(sets, name+": "+strings.Join(mrscRegionSets[name], ", "))
	}
	return strings.Join(sets, "; ")
}

var (
	dnsName      = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)
	hostedZoneID = regexp.MustCompile(`^Z[A-Z0-9]{1,31}$`)
)

// readDomain reads the domain clients reach every region at (required in
// the multi-region mode): its name and the Route 53 hosted zone that
// holds it.
func (c *Config) readDomain(input func(string) string) error {
	c.DomainName, c.HostedZoneID = input(InputDomainName), input(InputHostedZoneID)
	c.HostedZoneName = strings.TrimSuffix(input(InputHostedZoneName), ".")
	for _, in := range []struct{ key, value string }{{InputDomainName, c.DomainName}, {InputHostedZoneID, c.HostedZoneID}, {InputHostedZoneName, c.HostedZoneName}} {
		if in.value == "" {
			return fmt.Errorf("input %s is required in the multi-region mode (the domain whose latency records route clients to a region)", in.key)
		}
	}
	switch {
	case !dnsName.MatchString(c.DomainName):
		return fmt.Errorf("input %s=%q: want a lower-case DNS name such as pay.example.com", InputDomainName, c.DomainName)
	case !dnsName.MatchString(c.HostedZoneName):
		return fmt.Errorf("input %s=%q: want a lower-case DNS name such as example.com", InputHostedZoneName, c.HostedZoneName)
	case !hostedZoneID.MatchString(c.HostedZoneID):
		return fmt.Errorf("input %s=%q: want a Route 53 hosted zone id such as Z0123456789ABCDEFGHIJ", InputHostedZoneID, c.HostedZoneID)
	case c.DomainName != c.HostedZoneName && !strings.HasSuffix(c.DomainName, "."+c.HostedZoneName):
		return fmt.Errorf("input %s=%s is not in the hosted zone %s", InputDomainName, c.DomainName, c.HostedZoneName)
	}
	return nil
}

// inRegion is c as region's stack deploys it: placed there, with that
// region's collector layer (in c.Region, the one ConfigFor found or was
// given).
func (c Config) inRegion(region string) Config {
	if region == c.Region {
		return c
	}
	c.Region = region
	if c.Tracing {
		c.CollectorLayerARN = collectorLayerIn(region)
	}
	return c
}

// tableTTL reports whether c's table deletes expired records by TTL: the
// single-region table does (deploy.Deployed's mode); the multi-region one
// as its mode says (none for MRSC), and its sweeper purges them instead.
func (c Config) tableTTL() bool {
	if c.multiRegion() {
		return c.Table.TTL()
	}
	return deployed.Table.TTL()
}

// multiRegion reports whether c is the multi-region mode.
func (c Config) multiRegion() bool { return c.Table == deploy.MultiRegionStrong }

// where names c's deployment in names and descriptions: the environment,
// and in the multi-region mode the region too.
func (c Config) where(sep string) string {
	if c.multiRegion() {
		return c.Name + sep + c.Region
	}
	return c.Name
}

// StackName is the stack of region: idempay-<env>, and in the
// multi-region mode idempay-<env>-<region>.
func (c Config) StackName(region string) string {
	c.Region = region
	return "idempay-" + c.where("-")
}
