module github.com/wheeltimer/wheeltimer/examples/cron

go 1.25.0

require (
	github.com/robfig/cron/v3 v3.0.1
	github.com/stretchr/testify v1.11.1
	github.com/wheeltimer/wheeltimer v0.4.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/panjf2000/ants/v2 v2.12.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sync v0.11.0 // indirect
	golang.org/x/sys v0.35.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
