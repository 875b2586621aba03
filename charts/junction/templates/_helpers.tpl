{{- /* The chart's name: nameOverride, else "junction". */ -}}
{{- define "junction.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- /* The prefix of every object's name: fullnameOverride, else the release's name with the
chart's after it unless it already holds it ("junction" stays "junction", "edge" becomes
"edge-junction"), so that the cluster-scoped objects (ClusterRoles and their bindings) of a
release named like another chart's cannot take that chart's names. */ -}}
{{- define "junction.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "junction.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /* The namespace of every namespaced object the chart makes, but those that belong with the
UserPlaneFunctions (junction.upfNamespace). */ -}}
{{- define "junction.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{- /* Where the UserPlaneFunctions are, and so the pipeline ConfigMap and the P4Runtime TLS
Secret they name (a UPF reads both from its own namespace). */ -}}
{{- define "junction.upfNamespace" -}}
{{- default (include "junction.namespace" .) .Values.upfNamespace -}}
{{- end -}}

{{- define "junction.labels" -}}
app.kubernetes.io/name: {{ include "junction.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: junction
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- /* The operator's leader-election Lease (in junction.namespace). */ -}}
{{- define "junction.leaseName" -}}
{{- printf "%s-operator.atsss.junction.dev" (include "junction.fullname" .) -}}
{{- end -}}

{{- define "junction.operatorSelector" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- /* repository:tag, or repository@digest when image.digest is set. */ -}}
{{- define "junction.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- /* extraEnv of a component: a list of EnvVars, appended to the container's. */ -}}
{{- define "junction.extraEnv" -}}
{{- with . }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "junction.softupfName" -}}
{{- printf "%s-softupf" (include "junction.fullname" .) -}}
{{- end -}}

{{- /* "true" when the chart issues the software UPF's P4Runtime certificates (p4runtime-pki.yaml). */ -}}
{{- define "junction.softupfIssues" -}}
{{- $s := .Values.softupf -}}
{{- if and $s.enabled (not $s.insecure) (not $s.tls.secretName) -}}true{{- end -}}
{{- end -}}

{{- /* The Secret with the software UPF's server certificate: the values' or the chart's. */ -}}
{{- define "junction.softupfTLSSecret" -}}
{{- default (printf "%s-tls" (include "junction.softupfName" .)) .Values.softupf.tls.secretName -}}
{{- end -}}

{{- /* Whether cert-manager's API is in the cluster (or the render was told so). */ -}}
{{- define "junction.hasCertManager" -}}
{{- if .Capabilities.APIVersions.Has "cert-manager.io/v1" }}true{{ end -}}
{{- end -}}

{{- /* Who issues the chart's certificates: certManager or helm (softupf.tls.issuer, auto resolved). */ -}}
{{- define "junction.pkiIssuer" -}}
{{- $i := .Values.softupf.tls.issuer -}}
{{- if eq $i "auto" -}}
{{- if include "junction.hasCertManager" . }}certManager{{ else }}helm{{ end -}}
{{- else -}}
{{- $i -}}
{{- end -}}
{{- end -}}

{{- /* Whether metrics.tls.issuer has cert-manager issue the metrics certificates: "true" or "". */ -}}
{{- define "junction.metricsCertManager" -}}
{{- $i := .Values.metrics.tls.issuer -}}
{{- if or (eq $i "certManager") (and (eq $i "auto") (include "junction.hasCertManager" .)) }}true{{ end -}}
{{- end -}}

{{- /* Where the operator's metrics certificate comes from: secret (metrics.tls.secretName),
certManager (a CA of the chart's, metrics-tls.yaml) or selfSigned (the operator's own, which no
scraper can verify). */ -}}
{{- define "junction.metricsTLS" -}}
{{- if .Values.metrics.tls.secretName -}}secret
{{- else if include "junction.metricsCertManager" . -}}certManager
{{- else -}}selfSigned
{{- end -}}
{{- end -}}

{{- /* The Secret with the metrics certificate (tls.crt, tls.key, ca.crt), unless selfSigned. */ -}}
{{- define "junction.metricsTLSSecret" -}}
{{- default (printf "%s-metrics-tls" (include "junction.fullname" .)) .Values.metrics.tls.secretName -}}
{{- end -}}

{{- /* The same for the UE agents' one certificate: secret (ueAgent.metrics.tls.secretName),
certManager (from the operator's metrics CA) or selfSigned (each agent's own). */ -}}
{{- define "junction.agentMetricsTLS" -}}
{{- if .Values.ueAgent.metrics.tls.secretName -}}secret
{{- else if include "junction.metricsCertManager" . -}}certManager
{{- else -}}selfSigned
{{- end -}}
{{- end -}}

{{- define "junction.agentMetricsTLSSecret" -}}
{{- default (printf "%s-ue-agent-metrics-tls" (include "junction.fullname" .)) .Values.ueAgent.metrics.tls.secretName -}}
{{- end -}}

{{- /* The name the agents' certificate is for and scrapers check: agents listen on node addresses,
which no DNS name leads to. */ -}}
{{- define "junction.agentMetricsServerName" -}}
{{- printf "%s-ue-agent-metrics" (include "junction.fullname" .) -}}
{{- end -}}

{{- /* The namespaces the operator reads Secrets in, comma-separated: upfNamespaces with the
chart's own upfNamespace (where it puts the TLS Secret it makes), that alone by default; empty
for upfNamespaces ["*"]: every namespace. */ -}}
{{- define "junction.secretNamespaces" -}}
{{- if has "*" .Values.upfNamespaces -}}
{{- if gt (len .Values.upfNamespaces) 1 }}{{ fail "upfNamespaces: \"*\" (every namespace) stands alone" }}{{ end -}}
{{- else -}}
{{- append .Values.upfNamespaces (include "junction.upfNamespace" .) | uniq | join "," -}}
{{- end -}}
{{- end -}}

{{- /* The agent authorizer (ueAgent.nodeScopedReads): "true" when the operator serves it. */ -}}
{{- define "junction.agentAuthorizer" -}}
{{- if and .Values.ueAgent.enabled .Values.ueAgent.nodeScopedReads.enabled }}true{{ end -}}
{{- end -}}

{{- /* "true" when cert-manager issues its serving certificate from the chart's CA
(metrics-tls.yaml): no Secret named, and cert-manager in use. */ -}}
{{- define "junction.agentAuthorizerCertManager" -}}
{{- if and (include "junction.agentAuthorizer" .) (not .Values.ueAgent.nodeScopedReads.tls.secretName) (include "junction.metricsCertManager" .) }}true{{ end -}}
{{- end -}}

{{- /* Its serving certificate's Secret: the one named, else cert-manager's; the chart refuses
the authorizer without either. */ -}}
{{- define "junction.agentAuthorizerTLSSecret" -}}
{{- if .Values.ueAgent.nodeScopedReads.tls.secretName -}}{{ .Values.ueAgent.nodeScopedReads.tls.secretName }}
{{- else if include "junction.agentAuthorizerCertManager" . -}}{{ printf "%s-agent-authorizer-tls" (include "junction.fullname" .) }}
{{- else -}}{{ fail "ueAgent.nodeScopedReads needs a serving certificate: ueAgent.nodeScopedReads.tls.secretName, or cert-manager (metrics.tls.issuer)" }}
{{- end -}}
{{- end -}}

{{- define "junction.agentAuthorizerService" -}}
{{- printf "%s-agent-authorizer" (include "junction.fullname" .) -}}
{{- end -}}

{{- /* The agents' user name, as their pod-bound tokens authenticate. */ -}}
{{- define "junction.agentUser" -}}
{{- printf "system:serviceaccount:%s:%s-ue-agent" (include "junction.namespace" .) (include "junction.fullname" .) -}}
{{- end -}}
