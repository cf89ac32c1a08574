package dynamo

// SetPageSize makes the unpublished listing read pages of n entries, and
// returns what restores it.
func SetPageSize(n int32) (restore func()) {
	old := pageSize
	pageSize = n
	return func() { pageSize = old }
}

// ShardOf is shardOf, for the tests.
var ShardOf = shardOf

// Item is item, for the tests: an image in Lambda's form as the SDK's.
var Item = item
