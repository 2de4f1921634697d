// Package check holds the static checks of floe's deployment artifacts
// (deploy/Dockerfile, the Helm chart deploy/helm/floe, deploy/compose.yaml)
// in tests. No container engine or cluster runs here: the Dockerfile's build
// command is compared with the Makefile's and run, the chart is rendered
// with helm and every manifest decoded strictly into its k8s.io/api type,
// and the compose file is decoded strictly and cross-checked against
// `floe agent -h`. It is its own module so that k8s.io/api and client-go
// never enter the broker's go.mod.
package check
