package boincxml

import (
	"fmt"
	"html"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/bkit/bkit/lib/limits"
)

// MaxMasterFileBytes is the most of a master page ParseMasterFile reads: project home
// pages are small. A larger page is refused rather than cut (limits.MasterFileBytes).
const MaxMasterFileBytes = limits.MasterFileBytes

// The master page's patterns, compiled when first used: every program that links this
// package would otherwise compile them as it starts (issue 17: start-up time).
var (
	schedulerTag = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?is)<scheduler>\s*(.*?)\s*</scheduler>`)
	})
	linkTag = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?is)<link\b[^>]*>`) })
	attr    = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?is)([a-z_:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))`)
	})
)

// ParseMasterFile returns the scheduler URLs a project's master page names, in page
// order without duplicates. Both of BOINC's forms count, in any case, anywhere in the
// page: <scheduler>URL</scheduler> and <link rel="boinc_scheduler" href="URL">.
// Everything else on the page is ignored. A page naming no scheduler is not an error
// here; the caller decides what that means.
func ParseMasterFile(r io.Reader) ([]string, error) {
	b, err := limits.ReadAll(r, "master file", MaxMasterFileBytes)
	if err != nil {
		return nil, err
	}
	page := string(b)
	type hit struct {
		pos int
		url string
	}
	var hits []hit
	for _, m := range schedulerTag().FindAllStringSubmatchIndex(page, -1) {
		hits = append(hits, hit{m[0], html.UnescapeString(page[m[2]:m[3]])})
	}
	for _, m := range linkTag().FindAllStringIndex(page, -1) {
		var rel, href string
		var hasHref bool
		for _, a := range attr().FindAllStringSubmatch(page[m[0]:m[1]], -1) {
			v := a[2] + a[3] + a[4]
			switch strings.ToLower(a[1]) {
			case "rel":
				rel = v
			case "href":
				href, hasHref = v, true
			}
		}
		if hasHref && strings.EqualFold(strings.TrimSpace(rel), "boinc_scheduler") {
			hits = append(hits, hit{m[0], html.UnescapeString(strings.TrimSpace(href))})
		}
	}
	// Two passes found the hits; restore page order (insertion sort: pages name few).
	for i := 1; i < len(hits); i++ {
		for j := i; j > 0 && hits[j].pos < hits[j-1].pos; j-- {
			hits[j], hits[j-1] = hits[j-1], hits[j]
		}
	}
	var urls []string
	seen := map[string]bool{}
	for _, h := range hits {
		if h.url == "" || seen[h.url] {
			continue
		}
		seen[h.url] = true
		urls = append(urls, h.url)
	}
	return urls, nil
}

// MasterFile returns a minimal project master page naming the scheduler URLs in both
// of BOINC's forms, so old and new clients find them.
func MasterFile(projectName string, schedulerURLs []string) []byte {
	var b strings.Builder
	name := html.EscapeString(projectName)
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html>\n<head>\n<title>%s</title>\n", name)
	for _, u := range schedulerURLs {
		fmt.Fprintf(&b, "<link rel=\"boinc_scheduler\" href=\"%s\">\n", html.EscapeString(u))
	}
	b.WriteString("</head>\n<body>\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n<!--\n", name)
	for _, u := range schedulerURLs {
		fmt.Fprintf(&b, "<scheduler>%s</scheduler>\n", html.EscapeString(u))
	}
	b.WriteString("-->\n</body>\n</html>\n")
	return []byte(b.String())
}
