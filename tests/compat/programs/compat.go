// tests/compat/programs/compat.go - what tests/compat runs with Go, natively and in a sandbox:
// threads, files, a TCP server and client on loopback, and 300 MiB allocated and touched.
// Prints one "ok ..." line per step and "compat ok" at the end; any failure exits non-zero.
package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

const workers = 4
const memMiB = 300

func fail(step string, err error) {
	fmt.Fprintf(os.Stderr, "FAIL %s: %v\n", step, err)
	os.Exit(1)
}

// Each worker, on an OS thread of its own, writes its own file of 1 MiB; then the main thread
// reads them back.
func threadsAndFiles(dir string) {
	var wg sync.WaitGroup
	errs := make([]error, workers)
	sums := make([][32]byte, workers)
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			runtime.LockOSThread()
			data := bytes.Repeat([]byte{byte('a' + i)}, 1<<20)
			sums[i] = sha256.Sum256(data)
			errs[i] = os.WriteFile(filepath.Join(dir, fmt.Sprintf("w%d", i)), data, 0o644)
		}(i)
	}
	wg.Wait()
	for i := 0; i < workers; i++ {
		if errs[i] != nil {
			fail("threads", errs[i])
		}
	}
	fmt.Printf("ok threads %d\n", workers)
	for i := 0; i < workers; i++ {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("w%d", i)))
		if err != nil {
			fail("files", err)
		}
		if sha256.Sum256(data) != sums[i] {
			fail("files", fmt.Errorf("w%d reads back different bytes", i))
		}
	}
	fmt.Printf("ok files %d MiB\n", workers)
}

// A server on 127.0.0.1 (a port the kernel picks) echoes what one client sends.
func loopbackTCP() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail("tcp listen", err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		fail("tcp connect", err)
	}
	msg := bytes.Repeat([]byte("loopback "), 100000)
	go func() {
		c.Write(msg)
		c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		fail("tcp read", err)
	}
	if !bytes.Equal(got, msg) {
		fail("tcp", fmt.Errorf("echoed %d bytes of %d, or different ones", len(got), len(msg)))
	}
	fmt.Printf("ok tcp %d bytes\n", len(got))
}

// 300 MiB in 1 MiB blocks, a byte written in every page of each.
func memory() {
	blocks := make([][]byte, memMiB)
	sum := 0
	for i := range blocks {
		blocks[i] = make([]byte, 1<<20)
		for j := 0; j < len(blocks[i]); j += 4096 {
			blocks[i][j] = byte(i)
		}
	}
	for i := range blocks {
		for j := 0; j < len(blocks[i]); j += 4096 {
			sum += int(blocks[i][j])
		}
	}
	want := 0
	for i := 0; i < memMiB; i++ {
		want += 256 * (i % 256)
	}
	if sum != want {
		fail("memory", fmt.Errorf("read back %d, wrote %d", sum, want))
	}
	fmt.Printf("ok memory %d MiB\n", memMiB)
}

func main() {
	dir, err := os.MkdirTemp("", "compat-go-")
	if err != nil {
		fail("files", err)
	}
	defer os.RemoveAll(dir)
	threadsAndFiles(dir)
	loopbackTCP()
	memory()
	fmt.Println("compat ok")
}
