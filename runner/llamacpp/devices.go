package llamacpp

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// RPCTimeout bounds a --list-devices that registers RPC endpoints: an endpoint that accepts
// the connection and never answers makes llama-bench wait for ever (measured on build 11669).
const RPCTimeout = 10 * time.Second

// DeviceList is what llama-bench --list-devices printed with an environment and endpoints.
type DeviceList struct {
	Devices  []Device
	Backends []string
}

// ListDevices runs bench --list-devices with env (KEY=VALUE extras, e.g.
// GGML_VK_VISIBLE_DEVICES=0) and the RPC endpoints rpc (--rpc), bounded by MetaTimeout, or by
// RPCTimeout when there are endpoints. An endpoint that refuses the connection or does not
// answer is an *RPCError naming it (llama-bench aborts on the first, hangs on the second).
func ListDevices(ctx context.Context, bench string, env, rpc []string) (DeviceList, error) {
	args := []string{"--list-devices"}
	timeout := MetaTimeout
	if len(rpc) > 0 {
		args = append([]string{"--rpc", strings.Join(rpc, ",")}, args...)
		timeout = RPCTimeout
		// say which endpoint is at fault before llama-bench aborts on it
		for _, ep := range rpc {
			if err := dialRPC(ctx, ep); err != nil {
				return DeviceList{}, err
			}
		}
	}
	out, err := RunMetaEnv(ctx, timeout, env, bench, args...)
	if err != nil {
		if len(rpc) > 0 {
			for _, ep := range rpc {
				if strings.Contains(out, "Failed to connect to "+ep) {
					return DeviceList{}, &RPCError{Endpoint: ep, Refused: true}
				}
			}
			if strings.Contains(err.Error(), "no answer within") {
				return DeviceList{}, &RPCError{Endpoint: strings.Join(rpc, ","), Timeout: timeout}
			}
		}
		return DeviceList{}, fmt.Errorf("run %s --list-devices: %w", bench, err)
	}
	return DeviceList{Devices: ParseDevices(out), Backends: ParseBackends(out)}, nil
}

// RPCError is an RPC endpoint that could not be used.
type RPCError struct {
	Endpoint string
	Refused  bool          // nothing accepted the connection
	Timeout  time.Duration // accepted, then no answer within this
	Err      error
}

func (e *RPCError) Error() string {
	switch {
	case e.Refused:
		return fmt.Sprintf("RPC endpoint %s refused the connection: start ggml-rpc-server there (ggml-rpc-server -H HOST -p PORT), or fix axes.rpc", e.Endpoint)
	case e.Timeout > 0:
		return fmt.Sprintf("RPC endpoint %s did not answer within %s (it accepted the connection: is it a ggml-rpc-server of the same version?)", e.Endpoint, e.Timeout)
	default:
		return fmt.Sprintf("RPC endpoint %s: %v", e.Endpoint, e.Err)
	}
}

// dialRPC connects to an endpoint once, bounded by RPCTimeout.
func dialRPC(ctx context.Context, ep string) error {
	d := net.Dialer{Timeout: RPCTimeout}
	c, err := d.DialContext(ctx, "tcp", ep)
	if err != nil {
		if strings.Contains(err.Error(), "refused") {
			return &RPCError{Endpoint: ep, Refused: true}
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return &RPCError{Endpoint: ep, Timeout: RPCTimeout}
		}
		return &RPCError{Endpoint: ep, Err: err}
	}
	return c.Close()
}
