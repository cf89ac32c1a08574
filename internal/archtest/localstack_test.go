package archtest

import (
	"os"
	"regexp"
	"testing"
)

// TestLocalStackPin holds the LocalStack image to one exact release, named
// once in localstack/docker-compose.yml: every mention of a LocalStack
// image in the documents and the Makefile is that one, and
// docs/deploying.md, which says what the release needs, names it.
func TestLocalStackPin(t *testing.T) {
	compose, err := os.ReadFile("../../localstack/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	image := regexp.MustCompile(`localstack/localstack(-pro)?:[^\s"'` + "`" + `]+`)
	pins := image.FindAllString(string(compose), -1)
	if len(pins) != 1 || !regexp.MustCompile(`:\d+\.\d+\.\d+$`).MatchString(pins[0]) {
		t.Fatalf("localstack/docker-compose.yml pins %q: want one image at an exact release", pins)
	}
	pin := pins[0]
	named := false
	for _, path := range []string{"docs/deploying.md", "docs/local.md", "README.md", "Makefile"} {
		b, err := os.ReadFile("../../" + path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range image.FindAllString(string(b), -1) {
			if m != pin {
				t.Errorf("%s names %s; the compose file pins %s", path, m, pin)
			}
			named = named || path == "docs/deploying.md"
		}
	}
	if !named {
		t.Errorf("docs/deploying.md does not name the pinned image, %s", pin)
	}
}
