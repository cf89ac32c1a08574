package tabledef

import (
	"slices"
	"testing"
)

// TestAttributes: the attribute definitions name the table's key first, then
// each index key once.
func TestAttributes(t *testing.T) {
	def := Definition{
		Partition: Attribute{"pk", String},
		Indexes: []Index{
			{Name: "a", Partition: Attribute{"shard", String}, Sort: Attribute{"at", Number}},
			{Name: "b", Partition: Attribute{"shard", String}},
		},
	}
	want := []Attribute{{"pk", String}, {"shard", String}, {"at", Number}}
	if got := def.Attributes(); !slices.Equal(got, want) {
		t.Fatalf("attributes %v, want %v", got, want)
	}
	if got := Table().Attributes(); len(got) != 7 || got[0].Name != KeyAttribute {
		t.Fatalf("the table's attributes %v", got)
	}
}
