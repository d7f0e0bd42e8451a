// Command listgates prints the factory names of the built-in gates, for the
// dependency test of cmd/bidguard.
package main

import (
	"fmt"
	"sort"

	"github.com/bidguard/bidguard/gates"
)

func main() {
	var names []string
	for n := range gates.Builtin() {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Println(n)
	}
}
