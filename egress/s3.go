package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The defaults of S3Config.
const (
	DefaultS3Region      = "us-east-1"
	DefaultS3PartSize    = 8 << 20 // bytes; S3's smallest part is 5 MiB
	DefaultS3Concurrency = 2
	DefaultS3MaxAttempts = 5
	DefaultS3MaxBackoff  = 20 * time.Second
	minS3PartSize        = 5 << 20
)

// S3Config configures an S3 provider (AWS S3 or any S3-compatible
// storage). Bucket is required; the zero value of every other field is the
// default.
//
// Credentials are looked up in this order: AccessKeyID and SecretAccessKey
// when given; then the AWS SDK's default chain: the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), the shared
// credentials and config files (SharedCredentialsFile, SharedConfigFile,
// Profile, or AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE, AWS_PROFILE),
// web identity (Kubernetes service-account tokens: AWS_ROLE_ARN with
// AWS_WEB_IDENTITY_TOKEN_FILE), the ECS container endpoint, and the EC2
// instance metadata service unless DisableInstanceMetadata.
type S3Config struct {
	// Name is the provider's name; "" is "s3".
	Name string
	// Bucket is the bucket artifacts go to.
	Bucket string
	// Prefix is put before every object name, joined with "/"
	// ("dumps/prod" gives dumps/prod/NAME).
	Prefix string
	// Region is the bucket's region; "" takes AWS_REGION or the profile's
	// region, else us-east-1.
	Region string
	// Endpoint is the service's base URL for S3-compatible storage
	// ("https://minio.example:9000"); "" is AWS.
	Endpoint string
	// UsePathStyle addresses the bucket in the path
	// (ENDPOINT/BUCKET/KEY) rather than in the host name; most
	// S3-compatible servers need it.
	UsePathStyle bool

	// AccessKeyID, SecretAccessKey and SessionToken are static
	// credentials; empty takes the default chain.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// Profile is the shared config profile to use.
	Profile string
	// SharedCredentialsFile and SharedConfigFile replace the default
	// ~/.aws/credentials and ~/.aws/config.
	SharedCredentialsFile string
	SharedConfigFile      string
	// DisableInstanceMetadata keeps the chain from asking the EC2
	// instance metadata service (169.254.169.254) for credentials or a
	// region: for machines that are not on EC2.
	DisableInstanceMetadata bool

	// PartSize is the size of each part of a multipart upload; an
	// artifact larger than that is uploaded in parts. 0 is 8 MiB; less
	// than 5 MiB is refused.
	PartSize int64
	// Concurrency is how many parts are uploaded at once (each holds a
	// part in memory); 0 is 2.
	Concurrency int
	// MaxAttempts is how many times each request is sent before the upload
	// fails (retrying 5xx answers, throttling and broken connections with
	// exponential backoff and jitter); 0 is 5.
	MaxAttempts int
	// MaxBackoff caps the wait between two attempts; 0 is 20 s.
	MaxBackoff time.Duration
	// HTTPClient sends the requests; nil is the SDK's client.
	HTTPClient *http.Client
}

// S3 uploads artifacts to a bucket. It is safe for concurrent use.
type S3 struct {
	name   string
	cfg    S3Config
	client *s3.Client
	tm     *transfermanager.Client
}

// NewS3 checks the configuration and resolves the region and the
// credentials' source (credentials themselves are fetched, and refreshed,
// when a request needs them).
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("egress: the S3 provider needs a bucket")
	}
	if (cfg.AccessKeyID == "") != (cfg.SecretAccessKey == "") {
		return nil, errors.New("egress: give both the S3 access key id and the secret access key, or neither")
	}
	if cfg.PartSize == 0 {
		cfg.PartSize = DefaultS3PartSize
	} else if cfg.PartSize < minS3PartSize {
		return nil, fmt.Errorf("egress: S3 part size %d is below S3's minimum of 5 MiB", cfg.PartSize)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultS3Concurrency
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultS3MaxAttempts
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultS3MaxBackoff
	}
	name := cfg.Name
	if name == "" {
		name = "s3"
	}

	opts := []func(*config.LoadOptions) error{
		config.WithDefaultRegion(DefaultS3Region),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.MaxAttempts
				o.MaxBackoff = cfg.MaxBackoff
				// No client-side retry quota: each upload has its own
				// bound (MaxAttempts), and a burst of failures must not
				// stop later artifacts from being retried.
				o.RateLimiter = ratelimit.None
			})
		}),
		// S3-compatible servers differ in their support of the newer
		// flexible checksums (aws-chunked trailers); SigV4 signs the
		// payload hash either way.
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)))
	}
	if cfg.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(cfg.Profile))
	}
	if cfg.SharedCredentialsFile != "" {
		opts = append(opts, config.WithSharedCredentialsFiles([]string{cfg.SharedCredentialsFile}))
	}
	if cfg.SharedConfigFile != "" {
		opts = append(opts, config.WithSharedConfigFiles([]string{cfg.SharedConfigFile}))
	}
	if cfg.DisableInstanceMetadata {
		opts = append(opts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, config.WithHTTPClient(cfg.HTTPClient))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("egress: S3 configuration: %w", err)
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.UsePathStyle
	})
	tm := transfermanager.New(client, func(o *transfermanager.Options) {
		o.PartSizeBytes = cfg.PartSize
		o.MultipartUploadThreshold = cfg.PartSize
		o.Concurrency = cfg.Concurrency
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		// Abort a failed multipart upload even when ctx was cancelled,
		// so that its parts do not linger (and cost) in the bucket.
		o.FailTimeout = 30 * time.Second
	})
	cfg.Region = awsCfg.Region
	return &S3{name: name, cfg: cfg, client: client, tm: tm}, nil
}

// Name is the provider's name.
func (p *S3) Name() string { return p.name }

// Region is the region requests are signed for.
func (p *S3) Region() string { return p.cfg.Region }

// Client is the S3 client the provider uploads with (for reading objects
// back, listing or creating buckets).
func (p *S3) Client() *s3.Client { return p.client }

// Key is the object key an artifact named name is stored under.
func (p *S3) Key(name string) string {
	prefix := strings.Trim(p.cfg.Prefix, "/")
	if prefix == "" {
		return name
	}
	return prefix + "/" + name
}

// Put uploads the artifact to Bucket/Prefix/Name: in one PutObject when it
// is at most PartSize, else as a multipart upload of PartSize parts
// (aborted if any part fails). Each request is retried with backoff up to
// MaxAttempts times.
func (p *S3) Put(ctx context.Context, a Artifact) (Result, error) {
	key := p.Key(a.Name)
	dest := "s3://" + p.cfg.Bucket + "/" + key
	fail := func(err error) (Result, error) {
		e := &Error{Provider: p.name, Artifact: a.Name, Destination: dest, LocalPath: a.LocalPath, Err: err}
		var me *retry.MaxAttemptsError
		if errors.As(err, &me) {
			e.Attempts = me.Attempt
		}
		return Result{}, e
	}
	if err := checkArtifact(a); err != nil {
		return fail(err)
	}
	in := &transfermanager.UploadObjectInput{
		Bucket: aws.String(p.cfg.Bucket),
		Key:    aws.String(key),
		// A SectionReader is an io.Seeker: the size is known up front and
		// a retried request rewinds its body.
		Body:          io.NewSectionReader(a.Body, 0, a.Size),
		ContentLength: aws.Int64(a.Size),
		Metadata:      a.Metadata,
	}
	if a.ContentType != "" {
		in.ContentType = aws.String(a.ContentType)
	}
	out, err := p.tm.UploadObject(ctx, in)
	if err != nil {
		return fail(err)
	}
	return Result{Provider: p.name, Location: dest, Size: a.Size, ETag: strings.Trim(aws.ToString(out.ETag), `"`)}, nil
}
