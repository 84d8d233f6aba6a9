module github.com/sidesync/sidesync

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
