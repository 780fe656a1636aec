module github.com/ctxcode/ctxcode

go 1.26

require (
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/traefik/yaegi v0.16.1 // indirect
)
