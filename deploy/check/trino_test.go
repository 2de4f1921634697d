package check

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestComposeTrinoCatalog: the trino service mounts deploy/trino as its
// catalog folder, and its catalog floe (floe.properties, written with
// floe's Iceberg tables) is the Iceberg JDBC catalog in the compose file's
// own PostgreSQL, over its S3 server and bucket, with the same keys.
func TestComposeTrinoCatalog(t *testing.T) {
	f, dir := loadCompose(t)
	tr, ok := f.Services["trino"]
	if !ok {
		t.Fatal("no trino service")
	}
	if err := pinned(tr.Image); err != nil || !strings.HasPrefix(tr.Image, "trinodb/trino:") {
		t.Errorf("trino image %s: want trinodb/trino pinned (%v)", tr.Image, err)
	}
	mounted := ""
	for _, v := range tr.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && parts[1] == "/etc/trino/catalog" {
			mounted = parts[0]
		}
	}
	if mounted != "./trino" {
		t.Fatalf("trino volumes %v: want ./trino mounted on /etc/trino/catalog", tr.Volumes)
	}
	if d := tr.DependsOn["postgres"]; d.Condition != "service_healthy" {
		t.Error("trino does not wait for postgres")
	}
	path := filepath.Join(dir, "trino", "floe.properties")
	props, err := readProperties(path)
	if err != nil {
		t.Fatal(err)
	}

	pg := f.Services["postgres"].Environment
	s3Name, s3Port, user, secret := minioService(t, f)
	bucket := createdBucket(t, f, s3Name, s3Port, user, secret)
	for k, want := range map[string]string{
		"connector.name":                           "iceberg",
		"iceberg.catalog.type":                     "jdbc",
		"iceberg.jdbc-catalog.catalog-name":        "floe",
		"iceberg.jdbc-catalog.connection-url":      fmt.Sprintf("jdbc:postgresql://postgres:5432/%s", pg["POSTGRES_DB"]),
		"iceberg.jdbc-catalog.connection-user":     pg["POSTGRES_USER"],
		"iceberg.jdbc-catalog.connection-password": pg["POSTGRES_PASSWORD"],
		"fs.native-s3.enabled":                     "true",
		"s3.endpoint":                              fmt.Sprintf("http://%s:%s", s3Name, s3Port),
		"s3.path-style-access":                     "true",
		"s3.aws-access-key":                        user,
		"s3.aws-secret-key":                        secret,
	} {
		if props[k] != want {
			t.Errorf("%s: %s = %q, want %q (deploy/compose.yaml)", path, k, props[k], want)
		}
	}
	if wh := props["iceberg.jdbc-catalog.default-warehouse-dir"]; !strings.HasPrefix(wh, "s3://"+bucket+"/") {
		t.Errorf("%s: warehouse %q is not in the bucket %s", path, wh, bucket)
	}
}

// readProperties reads a Java properties file of key=value lines.
func readProperties(path string) (map[string]string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	props := map[string]string{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "!") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: line %q is not key=value", path, line)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return props, sc.Err()
}
