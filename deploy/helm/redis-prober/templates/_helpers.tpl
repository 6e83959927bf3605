{{- define "redis-prober.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "redis-prober.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "redis-prober.selectorLabels" -}}
app.kubernetes.io/name: {{ include "redis-prober.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "redis-prober.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "redis-prober.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: redis-prober
{{- end }}

{{- define "redis-prober.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "redis-prober.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The config file: .Values.config, with sharding when shards > 1. */}}
{{- define "redis-prober.config" -}}
{{- $cfg := deepCopy .Values.config }}
{{- if gt (int .Values.shards) 1 }}
{{- $_ := set $cfg "sharding" (dict "shards" (int .Values.shards)) }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/* Does the prober use a web config file, and which. */}}
{{- define "redis-prober.webConfigPath" -}}
{{- if .Values.web.basicAuth.enabled }}/etc/redis-prober/web/{{ .Values.web.basicAuth.webConfigSecret.key }}
{{- else if .Values.web.tls.enabled }}/etc/redis-prober/config/web-config.yml
{{- end }}
{{- end }}

{{/* The prober container, shared by the workload and the sidecar patch. */}}
{{- define "redis-prober.container" -}}
name: redis-prober
image: {{ printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) | quote }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
args:
  - --config.file=/etc/redis-prober/config/config.yml
  - --web.listen-address=:{{ .Values.web.port }}
  {{- with (include "redis-prober.webConfigPath" .) }}
  - --web.config.file={{ . }}
  {{- end }}
  {{- if .Values.redis.passwordSecret.name }}
  - --redis.password-file=/etc/redis-prober/secrets/redis/password
  {{- end }}
  {{- if .Values.redis.user }}
  - --redis.user={{ .Values.redis.user }}
  {{- end }}
  {{- if gt (int .Values.shards) 1 }}
  - --config.shard-index=$(SHARD_INDEX)
  {{- end }}
  {{- if .Values.hostMounts.proc }}
  - --path.procfs=/host/proc
  {{- end }}
  {{- if .Values.hostMounts.sys }}
  - --path.sysfs=/host/sys
  {{- end }}
  {{- range .Values.extraArgs }}
  - {{ . | quote }}
  {{- end }}
{{- if gt (int .Values.shards) 1 }}
env:
  # The StatefulSet controller labels each pod with its ordinal (Kubernetes 1.28+).
  - name: SHARD_INDEX
    valueFrom:
      fieldRef:
        fieldPath: metadata.labels['apps.kubernetes.io/pod-index']
{{- end }}
ports:
  - name: metrics
    containerPort: {{ .Values.web.port }}
    protocol: TCP
{{- if .Values.web.basicAuth.enabled }}
# Basic auth covers every path, health included: probe the port.
livenessProbe:
  tcpSocket:
    port: metrics
readinessProbe:
  tcpSocket:
    port: metrics
{{- else }}
livenessProbe:
  httpGet:
    path: /-/healthy
    port: metrics
    scheme: {{ ternary "HTTPS" "HTTP" .Values.web.tls.enabled }}
readinessProbe:
  httpGet:
    path: /-/ready
    port: metrics
    scheme: {{ ternary "HTTPS" "HTTP" .Values.web.tls.enabled }}
{{- end }}
resources:
  {{- toYaml .Values.resources | nindent 2 }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
volumeMounts:
  - name: redis-prober-config
    mountPath: /etc/redis-prober/config
    readOnly: true
  {{- if .Values.redis.passwordSecret.name }}
  - name: redis-prober-redis-password
    mountPath: /etc/redis-prober/secrets/redis
    readOnly: true
  {{- end }}
  {{- range .Values.extraSecretMounts }}
  - name: redis-prober-secret-{{ .name }}
    mountPath: /etc/redis-prober/secrets/{{ .name }}
    readOnly: true
  {{- end }}
  {{- if .Values.web.tls.enabled }}
  - name: redis-prober-tls
    mountPath: /etc/redis-prober/tls
    readOnly: true
  {{- end }}
  {{- if .Values.web.basicAuth.enabled }}
  - name: redis-prober-web
    mountPath: /etc/redis-prober/web
    readOnly: true
  {{- end }}
  {{- if .Values.hostMounts.proc }}
  - name: host-proc
    mountPath: /host/proc
    readOnly: true
  {{- end }}
  {{- if .Values.hostMounts.sys }}
  - name: host-sys
    mountPath: /host/sys
    readOnly: true
  {{- end }}
{{- end }}

{{/* The volumes of the prober container. */}}
{{- define "redis-prober.volumes" -}}
{{- /* Secret files: group-readable through the pod's fsGroup; in a sidecar
the Redis pod has no fsGroup of ours, so they are world-readable inside the
pod only (the prober then warns once that others may read them). */}}
{{- $mode := ternary 0444 0440 (eq .Values.mode "sidecar") }}
- name: redis-prober-config
  configMap:
    name: {{ include "redis-prober.fullname" . }}
{{- if .Values.redis.passwordSecret.name }}
- name: redis-prober-redis-password
  secret:
    secretName: {{ .Values.redis.passwordSecret.name }}
    defaultMode: {{ $mode }}
    items:
      - key: {{ .Values.redis.passwordSecret.key }}
        path: password
{{- end }}
{{- range .Values.extraSecretMounts }}
- name: redis-prober-secret-{{ .name }}
  secret:
    secretName: {{ .secretName }}
    defaultMode: {{ $mode }}
    {{- with .items }}
    items:
      {{- toYaml . | nindent 6 }}
    {{- end }}
{{- end }}
{{- if .Values.web.tls.enabled }}
- name: redis-prober-tls
  secret:
    secretName: {{ .Values.web.tls.secretName }}
    defaultMode: {{ $mode }}
{{- end }}
{{- if .Values.web.basicAuth.enabled }}
- name: redis-prober-web
  secret:
    secretName: {{ .Values.web.basicAuth.webConfigSecret.name }}
    defaultMode: {{ $mode }}
    items:
      - key: {{ .Values.web.basicAuth.webConfigSecret.key }}
        path: {{ .Values.web.basicAuth.webConfigSecret.key }}
{{- end }}
{{- if .Values.hostMounts.proc }}
- name: host-proc
  hostPath:
    path: /proc
    type: Directory
{{- end }}
{{- if .Values.hostMounts.sys }}
- name: host-sys
  hostPath:
    path: /sys
    type: Directory
{{- end }}
{{- end }}

{{/* The scrape endpoint settings shared by ServiceMonitor and PodMonitor. */}}
{{- define "redis-prober.scrape" -}}
{{- $m := .monitor }}
{{- $v := .root.Values }}
port: metrics
path: /metrics
interval: {{ $m.interval }}
scrapeTimeout: {{ $m.scrapeTimeout }}
scheme: {{ ternary "https" "http" $v.web.tls.enabled }}
{{- if and $v.web.tls.enabled $m.tlsConfig }}
tlsConfig:
  {{- toYaml $m.tlsConfig | nindent 2 }}
{{- end }}
{{- if $v.web.basicAuth.enabled }}
basicAuth:
  username:
    name: {{ $v.web.basicAuth.scrapeSecret.name }}
    key: {{ $v.web.basicAuth.scrapeSecret.usernameKey }}
  password:
    name: {{ $v.web.basicAuth.scrapeSecret.name }}
    key: {{ $v.web.basicAuth.scrapeSecret.passwordKey }}
{{- end }}
{{- with $m.relabelings }}
relabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $m.metricRelabelings }}
metricRelabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Monitor-level native-histogram settings: scrapeProtocols
(prometheus-operator >= 0.72) so protobuf, the format that carries native
histograms, is asked for first; scrapeNativeHistograms (>= 0.88), which a
Prometheus 3.8+ needs to store them at all. */}}
{{- define "redis-prober.nativeHistograms" -}}
{{- if .nativeHistograms }}
scrapeProtocols: [PrometheusProto, OpenMetricsText1.0.0, OpenMetricsText0.0.1, PrometheusText0.0.4]
{{- if .scrapeNativeHistograms }}
scrapeNativeHistograms: true
{{- end }}
{{- end }}
scrapeClassicHistograms: {{ .scrapeClassicHistograms }}
{{- end }}
