//! WAF against over-provisioning for three kinds of data, through the
//! library: incompressible, 50 % compressible (fio's
//! buffer_compress_percentage) and 30 % deduplicated. Writes a CSV and an
//! SVG plot.
//!
//! ```sh
//! cargo run --release --example wa_sweep -- [OUT_DIR] [CAPACITY_MIB]
//! ```

use std::error::Error;
use std::fmt::Write as _;
use std::path::PathBuf;

use duraflash::content::pattern::DataSpec;
use duraflash::lab::plot::{line_chart, LineChart, Series};
use duraflash::lab::wa::{self, WaSpec};
use duraflash::workload::access::Access;
use duraflash::{Drive, DriveConfig, Media};

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(args.next().unwrap_or_else(|| "wa_sweep_out".into()));
    let capacity_mib: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(512);
    std::fs::create_dir_all(&out)?;

    let base = DriveConfig::preset("sf2281-240g")?.scaled(capacity_mib << 20)?.with_pages_per_block(64)?;
    let kinds = [
        ("incompressible", DataSpec::incompressible()),
        ("50% compressible", DataSpec::compressible(50)?),
        ("30% deduplicated", DataSpec::incompressible().with_dedupe(30)?),
    ];
    let ops = [0.07, 0.15, 0.25, 0.35, 0.50];
    let mut csv = String::from("data,op,waf,model_greedy,compression_ratio,dedup_ratio\n");
    let mut series = Vec::new();
    for (name, data) in kinds {
        let mut points = Vec::new();
        for op in ops {
            let mut cfg = base.with_op(op)?;
            cfg.media = Media::MetadataOnly;
            let mut drive = Drive::new(cfg)?;
            let spec = WaSpec {
                access: Access::Uniform,
                request_bytes: 4096,
                data,
                trim_pct: 0,
                span: 1.0,
                precondition: 2.0,
                measure: 1.0,
            };
            let r = wa::run(&mut drive, &spec, 1, &mut |_, _| {})?;
            drive.check_invariants()?;
            let model = r.model.as_ref().map_or(f64::NAN, |m| m.greedy);
            writeln!(csv, "{name},{op},{:.4},{model:.4},{:.4},{:.4}", r.waf, r.compression_ratio, r.dedup_ratio)?;
            println!("{name:>18}  OP {:>4.0}%  WAF {:.3}  (model {model:.3})", op * 100.0, r.waf);
            points.push((op * 100.0, r.waf));
        }
        series.push(Series { name: name.into(), points });
    }
    std::fs::write(out.join("wa_sweep.csv"), csv)?;
    let chart = LineChart {
        title: format!("WAF against over-provisioning ({capacity_mib} MiB sf2281 model, greedy GC)"),
        x_label: "over-provisioning of the data blocks (%)".into(),
        y_label: "write amplification (NAND / host bytes)".into(),
        series,
        y_from_zero: true,
        ..Default::default()
    };
    line_chart(&out.join("wa_sweep.svg"), &chart)?;
    println!("wrote {} and {}", out.join("wa_sweep.csv").display(), out.join("wa_sweep.svg").display());
    Ok(())
}
