package dynamoledger

// SetPageSize makes the unpublished listing read pages of n entries, and
// returns what restores it.
func SetPageSize(n int32) (restore func()) {
	old := pageSize
	pageSize = n
	return func() { pageSize = old }
}

// ShardOf is shardOf, for the tests.
var ShardOf = shardOf
