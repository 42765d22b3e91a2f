//go:build !linux

package seccomp

import "fmt"

func runChild(string) int {
	fmt.Println("seccomp children run on Linux only")
	return 2
}
