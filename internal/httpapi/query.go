package httpapi

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/idempotent-payments/idempay/internal/route"
)

// ErrNoKeyParameter: the lookup's query names no idempotency key.
var ErrNoKeyParameter = errors.New("the query has no " + route.LookupParameter + " parameter")

// LookupKey parses the raw query string of a lookup (route.Lookup), as
// the client sent it: exactly one parameter, route.LookupParameter, whose
// percent-decoded value is the idempotency key as the client sent it in
// its Idempotency-Key header, unquoted. The raw string is parsed, not API
// Gateway's queryStringParameters, which joins a repeated parameter's
// values with commas, as a key may hold. So:
//
//   - parameters are separated by & only; a ; or a + is part of a value
//     (a key holds no space, so + can only mean itself);
//   - a parameter named twice, an unknown name (a case variant among
//     them), a parameter without =, an empty one and an invalid
//     percent-escape are each refused: each could mean two things;
//   - no parameter is ErrNoKeyParameter.
//
// The key itself is checked by the service (idem.Scope.Validate).
func LookupKey(rawQuery string) (string, error) {
	if rawQuery == "" {
		return "", ErrNoKeyParameter
	}
	var key string
	found := false
	for _, part := range strings.Split(rawQuery, "&") {
		rawName, rawValue, hasValue := strings.Cut(part, "=")
		name, err := url.PathUnescape(rawName)
		switch {
		case part == "":
			return "", fmt.Errorf("the query has an empty parameter")
		case err != nil:
			return "", fmt.Errorf("a query parameter's name is not validly percent-encoded")
		case name != route.LookupParameter:
			return "", fmt.Errorf("the query may hold only %s", route.LookupParameter)
		case !hasValue:
			return "", fmt.Errorf("%s has no value", route.LookupParameter)
		case found:
			return "", fmt.Errorf("%s is given more than once", route.LookupParameter)
		}
		if key, err = url.PathUnescape(rawValue); err != nil {
			return "", fmt.Errorf("%s is not validly percent-encoded", route.LookupParameter)
		}
		found = true
	}
	return key, nil
}
