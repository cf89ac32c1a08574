package dynamotest

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemSize is an item's size as DynamoDB bills it, by the developer
// guide's rules ("Item sizes and formats"): each attribute's name in UTF-8
// bytes plus its value — a string's UTF-8 bytes, a binary's bytes, a
// number's 1 byte per two significant digits plus 1, a boolean or null 1
// byte, a list or map 3 bytes plus 1 per element plus its elements (a
// map's element names included).
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for name, e := range v.Value {
			n += 1 + len(name) + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	}
	return 0
}

// numberSize: leading and trailing zeros do not count; 1 byte per two
// significant digits, plus 1.
func numberSize(s string) int {
	digits := strings.Trim(strings.NewReplacer("-", "", ".", "").Replace(s), "0")
	return (len(digits)+1)/2 + 1
}

// WriteUnits is the write request units of one standard write of an item
// of size bytes: 1 per KB, rounded up, at least 1.
func WriteUnits(size int) int { return max(1, (size+1023)/1024) }
