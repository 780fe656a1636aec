module github.com/ctxcode/ctxcode

go 1.26

require (
	github.com/stretchr/testify v1.12.1
	github.com/traefik/yaegi v0.16.1
)

require (
	github.com/docker/docker v28.5.2+incompatible // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
