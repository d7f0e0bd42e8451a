// Package rtb is the sidecar's bid path: the fasthttp server facing the
// exchange, the upstream client, deadlines, forwarding, response rewriting and
// the bid path's metrics. It is the only product package that imports fasthttp.
package rtb
