// pulumi-language-python for the real-engine tests: a minimal Python language host.
//
// Upstream's host lives in its own Go module (github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3),
// which the Go module proxy this project builds from refuses ("This module version is not available"), so this one
// does the parts the tests use, the way upstream does them: Run starts upstream's pulumi-language-python-exec shim
// (copied beside this binary from the github.com/pulumi/pulumi/sdk/v3 module by ./prepare) under the project's
// virtualenv with the engine's config in PULUMI_CONFIG / PULUMI_CONFIG_SECRET_KEYS, and RunPlugin starts a Python
// policy pack (`python -u <pack dir> ENGINE`) and streams its output back. It installs nothing: required plugins are
// the ones on PATH, and InstallDependencies, GetRequiredPlugins and GetRequiredPackages answer empty.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	pbempty "google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/grpc"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

const version = "3.274.0-gpu-platform"

// userActionableExit is the exec shim's code for "an error was already shown to the user".
const userActionableExit = 32

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	engine string
}

func main() {
	var engine string
	for _, a := range os.Args[1:] {
		if !strings.HasPrefix(a, "-") {
			engine = a // flags (-root, -tracing, runtime options) are accepted and unused
		}
	}
	srv := grpc.NewServer(rpcutil.OpenTracingServerInterceptorOptions(nil)...)
	pulumirpc.RegisterLanguageRuntimeServer(srv, &host{engine: engine})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%d\n", lis.Addr().(*net.TCPAddr).Port)
	if err := srv.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// python finds the interpreter the way upstream does: the `virtualenv` runtime option (relative to the project or
// pack root), else PULUMI_PYTHON_CMD, else python3 on PATH. It returns the extra environment for a virtualenv.
func python(info *pulumirpc.ProgramInfo) (string, []string, error) {
	opts := info.GetOptions().AsMap()
	if venv, _ := opts["virtualenv"].(string); venv != "" {
		if !filepath.IsAbs(venv) {
			venv = filepath.Join(info.GetRootDirectory(), venv)
		}
		exe := filepath.Join(venv, "bin", "python")
		if _, err := os.Stat(exe); err != nil {
			return "", nil, fmt.Errorf("the 'virtualenv' option in Pulumi.yaml is set to %q, but %q doesn't appear to be a virtualenv", opts["virtualenv"], venv)
		}
		return exe, []string{"VIRTUAL_ENV=" + venv, "PATH=" + filepath.Join(venv, "bin") + string(os.PathListSeparator) + os.Getenv("PATH")}, nil
	}
	if cmd := os.Getenv("PULUMI_PYTHON_CMD"); cmd != "" {
		return cmd, nil, nil
	}
	exe, err := exec.LookPath("python3")
	return exe, nil, err
}

func shim() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	self, err = filepath.EvalSymlinks(self)
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(self), "pulumi-language-python-exec")
	_, err = os.Stat(p)
	return p, err
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	if info == nil {
		info = &pulumirpc.ProgramInfo{RootDirectory: req.GetPwd(), ProgramDirectory: req.GetPwd(), EntryPoint: req.GetProgram()}
	}
	exe, venvEnv, err := python(info)
	if err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	sh, err := shim()
	if err != nil {
		return nil, fmt.Errorf("pulumi-language-python-exec must sit beside the language host: %w", err)
	}
	config, err := json.Marshal(req.GetConfig())
	if err != nil {
		return nil, err
	}
	secretKeys, err := json.Marshal(req.GetConfigSecretKeys())
	if err != nil {
		return nil, err
	}
	args := []string{"-u", sh,
		"--monitor", req.GetMonitorAddress(), "--engine", h.engine,
		"--project", req.GetProject(), "--stack", req.GetStack(),
		"--pwd", info.GetProgramDirectory(), "--root_directory", info.GetRootDirectory(),
		"--dry_run", fmt.Sprint(req.GetDryRun()), "--parallel", fmt.Sprint(req.GetParallel()),
		"--organization", req.GetOrganization(),
		info.GetEntryPoint()}
	args = append(args, req.GetArgs()...)
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Dir = info.GetProgramDirectory()
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), venvEnv...)
	cmd.Env = append(cmd.Env, "PULUMI_CONFIG="+string(config), "PULUMI_CONFIG_SECRET_KEYS="+string(secretKeys))
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if exit.ExitCode() == userActionableExit {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exit.ExitCode())}, nil
		}
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

type streamWriter struct {
	mu     *sync.Mutex
	send   func(*pulumirpc.RunPluginResponse) error
	stderr bool
}

func (w streamWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := append([]byte(nil), p...)
	r := &pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stdout{Stdout: b}}
	if w.stderr {
		r = &pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stderr{Stderr: b}}
	}
	if err := w.send(r); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (h *host) RunPlugin(req *pulumirpc.RunPluginRequest, stream pulumirpc.LanguageRuntime_RunPluginServer) error {
	info := req.GetInfo()
	exe, venvEnv, err := python(info)
	if err != nil {
		return err
	}
	program := info.GetProgramDirectory()
	if e := info.GetEntryPoint(); e != "" && e != "." {
		program = filepath.Join(program, e)
	}
	cmd := exec.CommandContext(stream.Context(), exe, append([]string{"-u", program}, req.GetArgs()...)...)
	cmd.Dir = req.GetPwd()
	cmd.Env = append(append(os.Environ(), req.GetEnv()...), venvEnv...) // later entries win
	mu := &sync.Mutex{}
	cmd.Stdout = streamWriter{mu, stream.Send, false}
	cmd.Stderr = streamWriter{mu, stream.Send, true}
	code := int32(0)
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return err
		}
		code = int32(exit.ExitCode())
	}
	return stream.Send(&pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: code}})
}

func (h *host) GetRequiredPlugins(context.Context, *pulumirpc.GetRequiredPluginsRequest) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

func (h *host) GetRequiredPackages(context.Context, *pulumirpc.GetRequiredPackagesRequest) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *pbempty.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

func (h *host) InstallDependencies(*pulumirpc.InstallDependenciesRequest, pulumirpc.LanguageRuntime_InstallDependenciesServer) error {
	return nil
}

func (h *host) About(_ context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	exe, _, err := python(req.GetInfo())
	if err != nil {
		return nil, err
	}
	out, _ := exec.Command(exe, "--version").Output()
	return &pulumirpc.AboutResponse{Executable: exe, Version: strings.TrimPrefix(strings.TrimSpace(string(out)), "Python ")}, nil
}

func (h *host) GetProgramDependencies(context.Context, *pulumirpc.GetProgramDependenciesRequest) (*pulumirpc.GetProgramDependenciesResponse, error) {
	return &pulumirpc.GetProgramDependenciesResponse{}, nil
}

func (h *host) RuntimeOptionsPrompts(context.Context, *pulumirpc.RuntimeOptionsRequest) (*pulumirpc.RuntimeOptionsResponse, error) {
	return &pulumirpc.RuntimeOptionsResponse{}, nil
}

func (h *host) Cancel(context.Context, *pbempty.Empty) (*pbempty.Empty, error) { return &pbempty.Empty{}, nil }

var _ io.Writer = streamWriter{}
