module github.com/wheeltimer/wheeltimer

go 1.23.0

require (
	github.com/panjf2000/ants/v2 v2.12.1
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.35.0
)

require (
	github.com/stretchr/testify v1.11.1 // indirect
	golang.org/x/sync v0.11.0 // indirect
)
