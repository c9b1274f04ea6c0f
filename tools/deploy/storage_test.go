package deploy_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestChartStorageIdentity: the export bucket's credentials as a platform team gives them: static
// keys in a Secret, the pods' cloud identity (no key at all), or a web identity the chart projects.
func TestChartStorageIdentity(t *testing.T) {
	const role = "arn:aws:iam::123456789012:role/tidemark-exports"
	users := []string{"authority", "operator"} // the deployables that read the bucket
	env := func(c corev1.Container) map[string]string {
		out := map[string]string{}
		for _, e := range c.Env {
			out[e.Name] = e.Value
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		args   []string
		secret bool     // the chart makes the keys' Secret
		keys   bool     // the pods get TIDEMARK_S3_ACCESS_KEY and _SECRET_KEY
		token  bool     // the pods mount a projected token and assume the role
		set    []string // further variables the pods get, name=value
	}{
		{"static keys", []string{"--set", "global.s3.accessKey=ak,global.s3.secretKey=sk"}, true, true, false, nil},
		{"the team's Secret", []string{"--set", "global.s3.existingSecret=exports-keys"}, false, true, false, nil},
		{"the pods' cloud identity", nil, false, false, false, nil},
		{"a web identity", []string{"--set", "global.s3.webIdentity.enabled=true,global.s3.webIdentity.roleArn=" + role +
			",global.s3.webIdentity.audience=tidemark-exports,global.s3.stsEndpoint=https://sts.example.com" +
			",global.s3.sessionDuration=9h"}, false, false, true,
			[]string{"AWS_ROLE_ARN=" + role, "TIDEMARK_S3_STS_ENDPOINT=https://sts.example.com", "TIDEMARK_S3_SESSION_DURATION=9h",
				"AWS_WEB_IDENTITY_TOKEN_FILE=/var/run/secrets/tidemark/s3/token"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs := objects(t, render(t, tt.args...))
			if got := find(objs, "Secret", release+"-s3") != nil; got != tt.secret {
				t.Errorf("the keys' Secret rendered: %v, want %v", got, tt.secret)
			}
			for _, d := range kinds(objs, "Deployment") {
				pod := typed[appsv1.Deployment](t, d).Spec.Template.Spec
				vars := env(pod.Containers[0])
				component := strings.TrimPrefix(d.GetName(), release+"-")
				reads := slices.Contains(users, component)
				_, hasKeys := vars["TIDEMARK_S3_ACCESS_KEY"]
				if hasKeys != (reads && tt.keys) {
					t.Errorf("%s gets static keys: %v", component, hasKeys)
				}
				var token *corev1.Volume
				for i, v := range pod.Volumes {
					if v.Name == "s3-token" {
						token = &pod.Volumes[i]
					}
				}
				if (token != nil) != (reads && tt.token) {
					t.Errorf("%s mounts a projected token: %v", component, token != nil)
				}
				if token != nil {
					src := token.Projected.Sources[0].ServiceAccountToken
					if src == nil || src.Audience != "tidemark-exports" || src.Path != "token" {
						t.Errorf("%s's token: %+v", component, token.Projected)
					}
				}
				for _, kv := range tt.set {
					name, value, _ := strings.Cut(kv, "=")
					if got, ok := vars[name]; ok != reads || reads && got != value {
						t.Errorf("%s: %s=%q (set: %v), want %q only where the bucket is used", component, name, got, ok, value)
					}
				}
			}
		})
	}
	for _, tt := range []struct {
		name, set, want string
	}{
		{"an identity beside keys", "global.s3.webIdentity.enabled=true,global.s3.webIdentity.roleArn=" + role + ",global.s3.accessKey=ak",
			"keys win over an identity"},
		{"an identity without a role", "global.s3.webIdentity.enabled=true", "needs global.s3.webIdentity.roleArn"},
		{"a session duration Go cannot read", "global.s3.sessionDuration=9 hours", "sessionDuration"},
	} {
		if _, err := helm(t, "template", release, chartDir(t), "--set", tt.set); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want refused naming %q", tt.name, err, tt.want)
		}
	}
}
