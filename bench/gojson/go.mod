module github.com/bidguard/bidguard/bench/gojson

go 1.26.8

require (
	github.com/bidguard/bidguard v0.0.0
	github.com/goccy/go-json v0.12.0
	github.com/prebid/openrtb/v20 v20.3.0
	github.com/stretchr/testify v1.12.1
)

require go.yaml.in/yaml/v3 v3.0.6 // indirect

replace github.com/bidguard/bidguard => ../..
