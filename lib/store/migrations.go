package store

// migrations are applied in order; migration i brings the schema to version i+1. Never
// edit one that has shipped: add a new one. Column types are those both engines read
// the same way (BIGINT, DOUBLE, VARCHAR(254), TEXT).
var migrations = [][]string{
	// 1: the tables of BOINC's scheduler, the retry job (seed 003) and locality
	// scheduling (seed 004).
	{
		`CREATE TABLE app (
			id {ID},
			create_time DOUBLE NOT NULL DEFAULT 0,
			name VARCHAR(254) NOT NULL,
			deprecated BIGINT NOT NULL DEFAULT 0,
			locality_scheduling BIGINT NOT NULL DEFAULT 0,
			CONSTRAINT app_name UNIQUE (name)
		){TABLE}`,
		// Platform-free: an app version says which resources it uses and how fast it
		// runs, and any host with those resources can run it.
		`CREATE TABLE app_version (
			id {ID},
			create_time DOUBLE NOT NULL DEFAULT 0,
			appid BIGINT NOT NULL REFERENCES app(id),
			version_num BIGINT NOT NULL,
			plan_class VARCHAR(254) NOT NULL DEFAULT '',
			avg_ncpus DOUBLE NOT NULL DEFAULT 1,
			coproc_type VARCHAR(254) NOT NULL DEFAULT '',
			coproc_count DOUBLE NOT NULL DEFAULT 0,
			flops DOUBLE NOT NULL DEFAULT 0,
			deprecated BIGINT NOT NULL DEFAULT 0,
			CONSTRAINT app_version_key UNIQUE (appid, version_num, plan_class)
		){TABLE}`,
		`CREATE TABLE host (
			id {ID},
			create_time DOUBLE NOT NULL DEFAULT 0,
			userid BIGINT NOT NULL DEFAULT 0,
			authenticator VARCHAR(254) NOT NULL,
			rpc_seqno BIGINT NOT NULL DEFAULT 0,
			rpc_time DOUBLE NOT NULL DEFAULT 0,
			platform_name VARCHAR(254) NOT NULL DEFAULT '',
			p_ncpus BIGINT NOT NULL DEFAULT 0,
			p_fpops DOUBLE NOT NULL DEFAULT 0,
			m_nbytes DOUBLE NOT NULL DEFAULT 0,
			coprocs VARCHAR(254) NOT NULL DEFAULT '',
			on_frac DOUBLE NOT NULL DEFAULT 0,
			connected_frac DOUBLE NOT NULL DEFAULT 0,
			active_frac DOUBLE NOT NULL DEFAULT 0,
			total_credit DOUBLE NOT NULL DEFAULT 0,
			expavg_credit DOUBLE NOT NULL DEFAULT 0,
			expavg_time DOUBLE NOT NULL DEFAULT 0,
			CONSTRAINT host_authenticator UNIQUE (authenticator)
		){TABLE}`,
		`CREATE TABLE batch (
			id {ID},
			create_time DOUBLE NOT NULL DEFAULT 0,
			appid BIGINT NOT NULL REFERENCES app(id),
			name VARCHAR(254) NOT NULL,
			state BIGINT NOT NULL DEFAULT 0,
			njobs BIGINT NOT NULL DEFAULT 0,
			nfiles BIGINT NOT NULL DEFAULT 0,
			completion_time DOUBLE NOT NULL DEFAULT 0,
			CONSTRAINT batch_name UNIQUE (name)
		){TABLE}`,
		// A cursor is a team of hosts working on a range of a batch's jobs (seed 004).
		`CREATE TABLE locality_cursor (
			id {ID},
			batch_id BIGINT NOT NULL REFERENCES batch(id),
			first_job_num BIGINT NOT NULL,
			last_job_num BIGINT NOT NULL,
			expavg_credit DOUBLE NOT NULL DEFAULT 0,
			remaining_credit DOUBLE NOT NULL DEFAULT 0,
			first_unfinished_job_num BIGINT NOT NULL DEFAULT 0,
			first_ungenerated_job_num BIGINT NOT NULL DEFAULT 0
		){TABLE}`,
		`CREATE TABLE batch_host (
			batch_id BIGINT NOT NULL REFERENCES batch(id),
			host_id BIGINT NOT NULL REFERENCES host(id),
			cursor_id BIGINT NOT NULL REFERENCES locality_cursor(id),
			PRIMARY KEY (batch_id, host_id)
		){TABLE}`,
		// The file sequence F1…Fn of a batch; names encode batch and file number so a
		// host's sticky files say where they came from.
		`CREATE TABLE batch_file (
			id {ID},
			batch_id BIGINT NOT NULL REFERENCES batch(id),
			file_num BIGINT NOT NULL,
			name VARCHAR(254) NOT NULL,
			url VARCHAR(254) NOT NULL DEFAULT '',
			nbytes DOUBLE NOT NULL DEFAULT 0,
			md5 VARCHAR(254) NOT NULL DEFAULT '',
			CONSTRAINT batch_file_num UNIQUE (batch_id, file_num),
			CONSTRAINT batch_file_name UNIQUE (name)
		){TABLE}`,
		// batch_id, cursor_id and job_num are 0 for work outside locality scheduling;
		// first_file_num..last_file_num is the job's contiguous run of batch files.
		`CREATE TABLE workunit (
			id {ID},
			create_time DOUBLE NOT NULL DEFAULT 0,
			appid BIGINT NOT NULL REFERENCES app(id),
			name VARCHAR(254) NOT NULL,
			rsc_fpops_est DOUBLE NOT NULL,
			rsc_fpops_bound DOUBLE NOT NULL,
			rsc_memory_bound DOUBLE NOT NULL DEFAULT 0,
			delay_bound DOUBLE NOT NULL,
			min_quorum BIGINT NOT NULL DEFAULT 1,
			target_nresults BIGINT NOT NULL DEFAULT 1,
			max_error_results BIGINT NOT NULL DEFAULT 3,
			max_total_results BIGINT NOT NULL DEFAULT 10,
			max_success_results BIGINT NOT NULL DEFAULT 6,
			transition_time DOUBLE NOT NULL DEFAULT 0,
			retry_check_time DOUBLE NOT NULL DEFAULT 0,
			need_validate BIGINT NOT NULL DEFAULT 0,
			canonical_resultid BIGINT NOT NULL DEFAULT 0,
			error_mask BIGINT NOT NULL DEFAULT 0,
			batch_id BIGINT NOT NULL DEFAULT 0,
			cursor_id BIGINT NOT NULL DEFAULT 0,
			job_num BIGINT NOT NULL DEFAULT 0,
			first_file_num BIGINT NOT NULL DEFAULT 0,
			last_file_num BIGINT NOT NULL DEFAULT -1,
			CONSTRAINT workunit_name UNIQUE (name)
		){TABLE}`,
		`CREATE INDEX workunit_retry ON workunit (appid, retry_check_time)`,
		`CREATE INDEX workunit_transition ON workunit (transition_time)`,
		`CREATE INDEX workunit_cursor ON workunit (cursor_id, job_num)`,
		// appid is copied from the workunit so that the scheduler's candidate scan
		// (unsent results of the apps this host can run) is one index range.
		`CREATE TABLE result (
			id {ID},
			create_time DOUBLE NOT NULL DEFAULT 0,
			workunitid BIGINT NOT NULL REFERENCES workunit(id),
			appid BIGINT NOT NULL,
			name VARCHAR(254) NOT NULL,
			server_state BIGINT NOT NULL DEFAULT 2,
			outcome BIGINT NOT NULL DEFAULT 0,
			client_state BIGINT NOT NULL DEFAULT 0,
			validate_state BIGINT NOT NULL DEFAULT 0,
			hostid BIGINT NOT NULL DEFAULT 0,
			userid BIGINT NOT NULL DEFAULT 0,
			app_version_id BIGINT NOT NULL DEFAULT 0,
			sent_time DOUBLE NOT NULL DEFAULT 0,
			received_time DOUBLE NOT NULL DEFAULT 0,
			report_deadline DOUBLE NOT NULL DEFAULT 0,
			cpu_time DOUBLE NOT NULL DEFAULT 0,
			elapsed_time DOUBLE NOT NULL DEFAULT 0,
			exit_status BIGINT NOT NULL DEFAULT 0,
			granted_credit DOUBLE NOT NULL DEFAULT 0,
			CONSTRAINT result_name UNIQUE (name)
		){TABLE}`,
		`CREATE INDEX result_unsent ON result (server_state, appid)`,
		`CREATE INDEX result_wu ON result (workunitid)`,
		`CREATE INDEX result_host ON result (hostid, server_state)`,
		// One row per workunit a cron job gave up on, so the project can query why
		// (DESIGN.md section 5, seed 003).
		`CREATE TABLE wu_giveup (
			id {ID},
			create_time DOUBLE NOT NULL,
			workunitid BIGINT NOT NULL REFERENCES workunit(id),
			appid BIGINT NOT NULL,
			reason VARCHAR(254) NOT NULL,
			message TEXT NOT NULL
		){TABLE}`,
	},
	// 2: accounts, platforms and files, so that a real BOINC client can join: users
	// (whose account key makes a client's new host theirs), app versions per platform
	// with their files, workunits' input files and output templates, and the output
	// files hosts uploaded.
	{
		// BOINC's name for an account. authenticator is the account key a volunteer
		// gives their client.
		`CREATE TABLE user (
			id {ID},
			create_time DOUBLE NOT NULL DEFAULT 0,
			name VARCHAR(254) NOT NULL,
			email_addr VARCHAR(254) NOT NULL DEFAULT '',
			authenticator VARCHAR(254) NOT NULL,
			total_credit DOUBLE NOT NULL DEFAULT 0,
			expavg_credit DOUBLE NOT NULL DEFAULT 0,
			expavg_time DOUBLE NOT NULL DEFAULT 0,
			CONSTRAINT user_authenticator UNIQUE (authenticator)
		){TABLE}`,
		`CREATE INDEX host_userid ON host (userid)`,
		// app_version gains a platform, which joins the unique key (version 1 exists
		// once per platform); '' is a platform-free version without files, as before.
		// Neither engine changes a unique key in place the same way: rebuild.
		`CREATE TABLE app_version_p (
			id {ID},
			create_time DOUBLE NOT NULL DEFAULT 0,
			appid BIGINT NOT NULL REFERENCES app(id),
			version_num BIGINT NOT NULL,
			platform VARCHAR(254) NOT NULL DEFAULT '',
			plan_class VARCHAR(254) NOT NULL DEFAULT '',
			avg_ncpus DOUBLE NOT NULL DEFAULT 1,
			coproc_type VARCHAR(254) NOT NULL DEFAULT '',
			coproc_count DOUBLE NOT NULL DEFAULT 0,
			flops DOUBLE NOT NULL DEFAULT 0,
			deprecated BIGINT NOT NULL DEFAULT 0,
			CONSTRAINT app_version_platform_key UNIQUE (appid, version_num, platform, plan_class)
		){TABLE}`,
		`INSERT INTO app_version_p (id, create_time, appid, version_num, plan_class, avg_ncpus, coproc_type, coproc_count, flops, deprecated)
			SELECT id, create_time, appid, version_num, plan_class, avg_ncpus, coproc_type, coproc_count, flops, deprecated FROM app_version`,
		`DROP TABLE app_version`,
		`ALTER TABLE app_version_p RENAME TO app_version`,
		// The files of an app version, stored in the download directory; file 0 is the
		// main program. file_signature is BOINC's: the project's code-signing key over
		// the file's MD5.
		`CREATE TABLE app_version_file (
			app_version_id BIGINT NOT NULL REFERENCES app_version(id),
			file_num BIGINT NOT NULL,
			name VARCHAR(254) NOT NULL,
			open_name VARCHAR(254) NOT NULL,
			main_program BIGINT NOT NULL DEFAULT 0,
			nbytes DOUBLE NOT NULL,
			md5_cksum VARCHAR(254) NOT NULL,
			file_signature TEXT NOT NULL,
			PRIMARY KEY (app_version_id, file_num)
		){TABLE}`,
		// A workunit's input files (in the download directory) and the output files
		// each of its results makes (the result template): output file_num k of result
		// R is named R_k.
		`CREATE TABLE wu_file (
			workunitid BIGINT NOT NULL REFERENCES workunit(id),
			file_num BIGINT NOT NULL,
			name VARCHAR(254) NOT NULL,
			open_name VARCHAR(254) NOT NULL,
			nbytes DOUBLE NOT NULL,
			md5_cksum VARCHAR(254) NOT NULL,
			PRIMARY KEY (workunitid, file_num)
		){TABLE}`,
		`CREATE TABLE wu_output (
			workunitid BIGINT NOT NULL REFERENCES workunit(id),
			file_num BIGINT NOT NULL,
			open_name VARCHAR(254) NOT NULL,
			max_nbytes DOUBLE NOT NULL,
			PRIMARY KEY (workunitid, file_num)
		){TABLE}`,
		// One row per output file a host uploaded in full (the file is in the upload
		// directory under name); digests for validation.
		`CREATE TABLE result_file (
			resultid BIGINT NOT NULL REFERENCES result(id),
			file_num BIGINT NOT NULL,
			name VARCHAR(254) NOT NULL,
			nbytes DOUBLE NOT NULL,
			md5_cksum VARCHAR(254) NOT NULL,
			sha256 VARCHAR(254) NOT NULL,
			upload_time DOUBLE NOT NULL,
			PRIMARY KEY (resultid, file_num)
		){TABLE}`,
	},
	// 3: what blocality needs beyond seed 004's tables (issue 12): a batch's job list,
	// from which the work generator makes workunits, and the batch's redundancy; what
	// the team rules read of a team without scanning its hosts.
	{
		`CREATE TABLE batch_job (
			batch_id BIGINT NOT NULL REFERENCES batch(id),
			job_num BIGINT NOT NULL,
			first_file_num BIGINT NOT NULL,
			last_file_num BIGINT NOT NULL,
			rsc_fpops_est DOUBLE NOT NULL,
			PRIMARY KEY (batch_id, job_num)
		){TABLE}`,
		`ALTER TABLE batch ADD COLUMN delay_bound DOUBLE NOT NULL DEFAULT 0`,
		`ALTER TABLE batch ADD COLUMN min_quorum BIGINT NOT NULL DEFAULT 1`,
		`ALTER TABLE batch ADD COLUMN target_nresults BIGINT NOT NULL DEFAULT 1`,
		`ALTER TABLE batch ADD COLUMN max_error_results BIGINT NOT NULL DEFAULT 3`,
		`ALTER TABLE batch ADD COLUMN max_total_results BIGINT NOT NULL DEFAULT 10`,
		`ALTER TABLE batch ADD COLUMN max_success_results BIGINT NOT NULL DEFAULT 6`,
		// The team's size and fastest member's rate, kept with expavg_credit.
		`ALTER TABLE locality_cursor ADD COLUMN nhosts BIGINT NOT NULL DEFAULT 0`,
		`ALTER TABLE locality_cursor ADD COLUMN max_host_credit DOUBLE NOT NULL DEFAULT 0`,
		// The member's user and the rate it added to its team's expavg_credit, so that
		// leaving takes off exactly what joining put on.
		`ALTER TABLE batch_host ADD COLUMN userid BIGINT NOT NULL DEFAULT 0`,
		`ALTER TABLE batch_host ADD COLUMN credit DOUBLE NOT NULL DEFAULT 0`,
		`CREATE INDEX batch_host_cursor ON batch_host (cursor_id)`,
		`CREATE INDEX batch_host_user ON batch_host (batch_id, userid)`,
		`CREATE INDEX locality_cursor_batch ON locality_cursor (batch_id)`,
	},
	// 4: seed 003's per-app retry parameters (DWU, Dresult, NError, Ndet,
	// Nredundancy; bserver app set), the optional output digest a client reports with
	// a result (the validator compares them), and the indexes the retry job scans:
	// due workunits of an app not waiting for validation, and in-progress results of
	// an app by deadline.
	{
		`ALTER TABLE app ADD COLUMN retry_dwu DOUBLE NOT NULL DEFAULT 172800`,
		`ALTER TABLE app ADD COLUMN retry_dresult DOUBLE NOT NULL DEFAULT 86400`,
		`ALTER TABLE app ADD COLUMN retry_nerror BIGINT NOT NULL DEFAULT 3`,
		`ALTER TABLE app ADD COLUMN retry_ndet BIGINT NOT NULL DEFAULT 6`,
		`ALTER TABLE app ADD COLUMN retry_nredundancy BIGINT NOT NULL DEFAULT 1`,
		`ALTER TABLE result ADD COLUMN output_digest VARCHAR(254) NOT NULL DEFAULT ''`,
		`CREATE INDEX workunit_due ON workunit (appid, need_validate, retry_check_time)`,
		`CREATE INDEX result_deadline ON result (appid, server_state, report_deadline)`,
	},
	// 5: locality scheduling at scale (issue 12). A workunit's results by state,
	// outcome and host in one index: the scheduler's check that a host has no result of
	// a candidate's workunit yet (without it, SQLite scanned all of the host's results
	// for every candidate), the generator's count of unsent jobs and the transitioner's
	// test of a finished job read the index alone. est_time_left is a column
	// computed from remaining_credit and expavg_credit (infinite: 1e300) with an index,
	// so that host assignment reads the few cursors with the greatest est_time_left
	// instead of all of a batch's cursors.
	{
		`CREATE INDEX result_wu_state ON result (workunitid, server_state, outcome, hostid)`,
		`ALTER TABLE locality_cursor ADD COLUMN est_time_left DOUBLE GENERATED ALWAYS AS
			(CASE WHEN remaining_credit<=0 THEN 0 WHEN expavg_credit<=0 THEN 1e300 ELSE remaining_credit/expavg_credit END) VIRTUAL`,
		`CREATE INDEX locality_cursor_etl ON locality_cursor (batch_id, est_time_left DESC, id)`,
		// Per-host streams (docs/decisions.md): a batch's stream length in jobs (0: no
		// streams, seed 004's plain job order) and the stream a team member works on
		// (-1: none yet).
		`ALTER TABLE batch ADD COLUMN stream_jobs BIGINT NOT NULL DEFAULT 0`,
		`ALTER TABLE batch_host ADD COLUMN stream BIGINT NOT NULL DEFAULT -1`,
	},
	// 6: the transitioner works on what changed (issue 12's speed round). A locality
	// workunit's transition_time > 0 says something that may finish its job or make
	// it unfinished again happened since the transitioner last looked at it (a
	// report, validation, the retry job: Tx.WorkunitsChanged); the transitioner sets
	// it back to 0. locality_counted: the job's credit is off its cursor's
	// remaining_credit (it was finished when last looked at). Existing databases:
	// every locality workunit is marked changed and uncounted, and remaining_credit
	// goes back to the credit of the cursor's jobs from first_unfinished_job_num on
	// (locality.CreditPerFlop: 200 per 86400e9 FLOPs; above 0 while jobs are
	// left), so the first pass counts everything once.
	{
		`ALTER TABLE workunit ADD COLUMN locality_counted BIGINT NOT NULL DEFAULT 0`,
		`CREATE INDEX workunit_cursor_changed ON workunit (cursor_id, transition_time)`,
		`UPDATE workunit SET transition_time=1 WHERE cursor_id<>0 AND transition_time<=0`,
		`UPDATE locality_cursor SET remaining_credit=COALESCE(NULLIF((SELECT SUM(j.rsc_fpops_est) FROM batch_job j
			WHERE j.batch_id=locality_cursor.batch_id AND j.job_num>=locality_cursor.first_unfinished_job_num
			AND j.job_num<=locality_cursor.last_job_num)*200/(86400*1e9), 0), 1e-300) WHERE remaining_credit>0`,
	},
	// 7: a locality result carries its workunit's cursor and job number (0 for other
	// work), as it carries its app, so that a cursor's unsent results in job order are
	// one index range: the scheduler's candidates, a host's first takeable job and the
	// generator's count of unsent jobs read the unsent results only, not every
	// workunit from first_unfinished_job_num on (in-order dispatch has thousands in
	// progress there).
	{
		`ALTER TABLE result ADD COLUMN cursor_id BIGINT NOT NULL DEFAULT 0`,
		`ALTER TABLE result ADD COLUMN job_num BIGINT NOT NULL DEFAULT 0`,
		`UPDATE result SET cursor_id=(SELECT w.cursor_id FROM workunit w WHERE w.id=result.workunitid),
			job_num=(SELECT w.job_num FROM workunit w WHERE w.id=result.workunitid)
			WHERE workunitid IN (SELECT id FROM workunit WHERE cursor_id<>0)`,
		`CREATE INDEX result_cursor ON result (cursor_id, server_state, job_num)`,
	},
	// 8: a host's BOINC cross-project id (<host_cpid>): a client that detaches and
	// attaches again presents it with host id 0, and gets back its host (as BOINC's
	// scheduler does) instead of a new one. The index finds a user's host by it.
	// A user's passwd_hash is BOINC's (MD5 hex of the password and the lower-case
	// e-mail address, which clients send to lookup_account.php); '' for an account
	// without a password, which only its account key attaches.
	{
		`ALTER TABLE host ADD COLUMN host_cpid VARCHAR(254) NOT NULL DEFAULT ''`,
		`CREATE INDEX host_user_cpid ON host (userid, host_cpid)`,
		`ALTER TABLE user ADD COLUMN passwd_hash VARCHAR(254) NOT NULL DEFAULT ''`,
		`CREATE INDEX user_email ON user (email_addr)`,
		// What a BOINC client reports of a task's run (its stderr, the exit message),
		// for the project to see why tasks fail: one row per recorded report that had
		// any, outside result so that the scheduler's rows stay narrow.
		`CREATE TABLE result_stderr (
			resultid BIGINT NOT NULL PRIMARY KEY,
			stderr_out TEXT NOT NULL
		){TABLE}`,
	},
	// 9: accounts a client creates (BOINC's create_account.php). password_email is the
	// e-mail address of an account that has a password, NULL for the others: its unique
	// index makes two servers creating an account for one address at once make one.
	// An address shared by older accounts with passwords keeps it on the first.
	{
		`ALTER TABLE user ADD COLUMN password_email VARCHAR(254) NULL`,
		`UPDATE user SET password_email=email_addr WHERE passwd_hash<>'' AND id IN
			(SELECT id FROM (SELECT MIN(id) AS id FROM user WHERE passwd_hash<>'' GROUP BY email_addr) firsts)`,
		`CREATE UNIQUE INDEX user_password_email ON user (password_email)`,
	},
	// 10: one host per user and BOINC host cross-project id (issue 28): two first
	// requests of one client at once made two hosts on MariaDB. cpid_key is the
	// host_cpid of a user's host, under a unique key with userid; NULL for bkit's own
	// hosts (no user), for a host whose cpid changed since it was made, and for the
	// older hosts of a user and cpid made before this key (they keep their rows and
	// results; the latest keeps the key, as HostByUserCPID picks the latest).
	{
		`ALTER TABLE host ADD COLUMN cpid_key VARCHAR(254) NULL`,
		`UPDATE host SET cpid_key=host_cpid WHERE id IN
			(SELECT id FROM (SELECT MAX(id) AS id FROM host WHERE userid<>0 AND host_cpid<>'' GROUP BY userid, host_cpid) latest)`,
		`CREATE UNIQUE INDEX host_user_cpid_key ON host (userid, cpid_key)`,
	},
	// 11: every account's e-mail address in lower case, as BOINC stores them and as
	// accounts with passwords already were: create_account.php compares exactly
	// (utf8mb4_bin on MySQL), so an address 'bserver user add' stored as typed was
	// missed and a second account made for it (issue 28).
	{
		`UPDATE user SET email_addr=LOWER(email_addr) WHERE email_addr<>LOWER(email_addr)`,
	},
	// 12: the account endpoints' request limit, shared by every server of the project
	// (issue 28): one row per client network (/24, /64) with the time its bucket is
	// full again plus one interval (store.TakeAccountRequest).
	{
		`CREATE TABLE account_bucket (
			network VARCHAR(64) NOT NULL PRIMARY KEY,
			tat DOUBLE NOT NULL
		){TABLE}`,
		`CREATE INDEX account_bucket_tat ON account_bucket (tat)`,
	},
	// 13: the lifecycle after validation (issue 27): assimilation, file deletion and
	// purge. assimilate_state and file_delete_state are BOINC's (0 init, 2 done);
	// assimilate_ready is 1 for a workunit the assimilator has to hand over (a
	// canonical result or given up, not yet assimilated), computed so that no writer
	// of canonical_resultid or error_mask has to remember it, and indexed so that a
	// pass reads the backlog alone. A failed hand-over is retried at
	// assimilate_retry_time (a per-workunit backoff; assimilate_errors counts the
	// failures, assimilate_message says the last). lifecycle_owner and
	// lifecycle_lease are an assimilator's claim on the workunit while it hands it
	// over outside any transaction. deleted_file is the file deleter's journal: a
	// row per file it decided to delete (done=0 until it is gone), so a deleter killed
	// between its decision and the unlink finishes the job on its next pass. A batch's
	// file_delete_state: its batch files went the same way once no cursor needed them.
	{
		`ALTER TABLE workunit ADD COLUMN assimilate_state BIGINT NOT NULL DEFAULT 0`,
		`ALTER TABLE workunit ADD COLUMN assimilate_time DOUBLE NOT NULL DEFAULT 0`,
		`ALTER TABLE workunit ADD COLUMN assimilate_errors BIGINT NOT NULL DEFAULT 0`,
		`ALTER TABLE workunit ADD COLUMN assimilate_retry_time DOUBLE NOT NULL DEFAULT 0`,
		`ALTER TABLE workunit ADD COLUMN assimilate_message VARCHAR(254) NOT NULL DEFAULT ''`,
		`ALTER TABLE workunit ADD COLUMN file_delete_state BIGINT NOT NULL DEFAULT 0`,
		`ALTER TABLE workunit ADD COLUMN file_delete_time DOUBLE NOT NULL DEFAULT 0`,
		`ALTER TABLE workunit ADD COLUMN lifecycle_owner VARCHAR(254) NOT NULL DEFAULT ''`,
		`ALTER TABLE workunit ADD COLUMN lifecycle_lease DOUBLE NOT NULL DEFAULT 0`,
		`ALTER TABLE workunit ADD COLUMN assimilate_ready BIGINT GENERATED ALWAYS AS
			(CASE WHEN assimilate_state=0 AND (canonical_resultid<>0 OR error_mask<>0) THEN 1 ELSE 0 END) VIRTUAL`,
		`CREATE INDEX workunit_assimilate ON workunit (assimilate_ready)`,
		`CREATE INDEX workunit_file_delete ON workunit (assimilate_state, file_delete_state)`,
		`CREATE INDEX workunit_purge ON workunit (file_delete_state, file_delete_time)`,
		`CREATE INDEX workunit_lifecycle_owner ON workunit (lifecycle_owner)`,
		`CREATE INDEX wu_file_name ON wu_file (name, workunitid)`,
		`CREATE INDEX wu_giveup_wu ON wu_giveup (workunitid)`,
		`ALTER TABLE batch ADD COLUMN file_delete_state BIGINT NOT NULL DEFAULT 0`,
		`CREATE TABLE deleted_file (
			id {ID},
			create_time DOUBLE NOT NULL,
			workunitid BIGINT NOT NULL DEFAULT 0,
			batch_id BIGINT NOT NULL DEFAULT 0,
			directory VARCHAR(254) NOT NULL,
			name VARCHAR(254) NOT NULL,
			nbytes DOUBLE NOT NULL DEFAULT 0,
			done BIGINT NOT NULL DEFAULT 0,
			message VARCHAR(254) NOT NULL DEFAULT ''
		){TABLE}`,
		`CREATE INDEX deleted_file_pending ON deleted_file (done)`,
		`CREATE INDEX deleted_file_wu ON deleted_file (workunitid)`,
	},
	// 14: what an operator sees (issue 31). cron_run is one row per run of a cron job
	// (bretry, its validator, blocality's daemons, the lifecycle jobs), written when the
	// run starts (finished=0: running, or killed if it stays so) and completed when it
	// ends; old rows are pruned. cron_job keeps each job's totals and last run, so the
	// status page and /metrics read one row per job and its counters never go back
	// when history is pruned. A result's validate_time is when the validator judged
	// it; received_time, validate_time and a host's rpc_time are indexed for the
	// status page's "last hour / last day" counts.
	{
		`CREATE TABLE cron_run (
			id {ID},
			job VARCHAR(254) NOT NULL,
			app VARCHAR(254) NOT NULL DEFAULT '',
			host VARCHAR(254) NOT NULL DEFAULT '',
			pid BIGINT NOT NULL DEFAULT 0,
			start_time DOUBLE NOT NULL,
			duration DOUBLE NOT NULL DEFAULT 0,
			finished BIGINT NOT NULL DEFAULT 0,
			success BIGINT NOT NULL DEFAULT 0,
			nrows BIGINT NOT NULL DEFAULT 0,
			message VARCHAR(254) NOT NULL DEFAULT ''
		){TABLE}`,
		`CREATE INDEX cron_run_job ON cron_run (job, app, start_time)`,
		`CREATE TABLE cron_job (
			job VARCHAR(191) NOT NULL,
			app VARCHAR(191) NOT NULL DEFAULT '',
			runs BIGINT NOT NULL DEFAULT 0,
			failures BIGINT NOT NULL DEFAULT 0,
			nrows BIGINT NOT NULL DEFAULT 0,
			seconds DOUBLE NOT NULL DEFAULT 0,
			last_start DOUBLE NOT NULL DEFAULT 0,
			last_duration DOUBLE NOT NULL DEFAULT 0,
			last_success BIGINT NOT NULL DEFAULT 0,
			last_nrows BIGINT NOT NULL DEFAULT 0,
			last_message VARCHAR(254) NOT NULL DEFAULT '',
			last_success_time DOUBLE NOT NULL DEFAULT 0,
			PRIMARY KEY (job, app)
		){TABLE}`,
		`ALTER TABLE result ADD COLUMN validate_time DOUBLE NOT NULL DEFAULT 0`,
		`CREATE INDEX result_received ON result (received_time)`,
		`CREATE INDEX result_validated ON result (validate_time, validate_state)`,
		`CREATE INDEX host_rpc_time ON host (rpc_time, userid)`,
	},
	// 15: the volunteers' pages (issue 31): top users and hosts by recent average and
	// total credit read the first rows of an index instead of sorting every row.
	{
		`CREATE INDEX user_expavg ON user (expavg_credit)`,
		`CREATE INDEX user_total ON user (total_credit)`,
		`CREATE INDEX host_expavg ON host (expavg_credit)`,
		`CREATE INDEX host_total ON host (total_credit)`,
	},
	// 16: purge (issue 27). A purger claims a batch of file-deleted workunits by
	// writing a purge_batch row's id into their purge_batch, writes the batch's rows
	// into the archive's daily files, and then deletes them with the row. Its state:
	// 0 claimed (owner's until lease), 1 being written (files holds each archive
	// file's size before the batch's member was appended, so a purger killed before
	// its rows were deleted is undone by cutting its files back; archive names the
	// archive directory, host:path). workunit_purge_scan lets a pass walk the
	// unclaimed file-deleted workunits in id order; it replaces workunit_purge, which
	// nothing read.
	{
		`ALTER TABLE workunit ADD COLUMN purge_batch BIGINT NOT NULL DEFAULT 0`,
		`DROP INDEX workunit_purge{ON workunit}`,
		`CREATE INDEX workunit_purge_scan ON workunit (file_delete_state, purge_batch)`,
		`CREATE TABLE purge_batch (
			id {ID},
			create_time DOUBLE NOT NULL,
			owner VARCHAR(254) NOT NULL,
			lease DOUBLE NOT NULL DEFAULT 0,
			state BIGINT NOT NULL DEFAULT 0,
			archive TEXT NOT NULL,
			files TEXT NOT NULL
		){TABLE}`,
	},
	// 17: the status page's count of workunits waiting for assimilation per app reads
	// an index alone (issue 31: the rows themselves took 1.7 s at 900,000 waiting).
	{
		`CREATE INDEX workunit_assimilate_app ON workunit (assimilate_ready, appid)`,
	},
	// 18: quotas (issue 27). An app's jobs a day per CPU and per GPU instance
	// (BOINC's daily_result_quota) and jobs in progress per instance (BOINC's
	// max_wus_in_progress, max_wus_in_progress_gpu), 0 for no limit; host_app_version
	// is BOINC's table of the same name: a host's own daily quota of an app version
	// (max_jobs_per_day, 0 until set: the app's), lowered by its errors and raised by
	// its successes, and the jobs sent on day jobs_day (UTC days since 1970).
	{
		`ALTER TABLE app ADD COLUMN daily_quota BIGINT NOT NULL DEFAULT 500`,
		`ALTER TABLE app ADD COLUMN daily_quota_gpu BIGINT NOT NULL DEFAULT 500`,
		`ALTER TABLE app ADD COLUMN max_in_progress BIGINT NOT NULL DEFAULT 10`,
		`ALTER TABLE app ADD COLUMN max_in_progress_gpu BIGINT NOT NULL DEFAULT 10`,
		`CREATE TABLE host_app_version (
			host_id BIGINT NOT NULL,
			app_version_id BIGINT NOT NULL,
			max_jobs_per_day BIGINT NOT NULL DEFAULT 0,
			n_jobs_today BIGINT NOT NULL DEFAULT 0,
			jobs_day BIGINT NOT NULL DEFAULT 0,
			PRIMARY KEY (host_id, app_version_id)
		){TABLE}`,
	},
	// 19: seed 003's Dresult governs the deadline of the results a retry makes (issue
	// 27): result.dresult is the Dresult a retry gave the result (0 for the results of
	// work create and the generator), and the scheduler sends it with the deadline
	// send time + dresult instead of + the workunit's delay_bound.
	{
		`ALTER TABLE result ADD COLUMN dresult DOUBLE NOT NULL DEFAULT 0`,
	},
	// 20: a purge pass walks only the workunits whose files went before its cutoff, by
	// file_delete_time (issue 27's benchmark: walking every unclaimed file-deleted
	// workunit in id order read a project's whole recent history, 900,000 workunits
	// too young to purge, at each pass). The index is ordered by (file_delete_time,
	// id) within its first two columns: the engines append the primary key.
	{
		`DROP INDEX workunit_purge_scan{ON workunit}`,
		`CREATE INDEX workunit_purge_age ON workunit (file_delete_state, purge_batch, file_delete_time)`,
	},
	// 21: the hosts an account made lately, counted when it makes another (the
	// scheduler's limit of new hosts per account and day: an adversarial probe made
	// 53,000 hosts of one account in 90 s, issue 27), by a range of this index
	// bounded by the limit, however many hosts the account has.
	{
		`CREATE INDEX host_user_created ON host (userid, create_time)`,
	},
	// 22: result_wu (workunitid) is a prefix of result_wu_state (workunitid,
	// server_state, outcome, hostid), which serves every lookup of a workunit's results
	// and the foreign key on MariaDB; result_wu was one more b-tree that every result's
	// insert and every purge's delete wrote (issue 33).
	{
		`DROP INDEX result_wu{ON result}`,
	},
}
