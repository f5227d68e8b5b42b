//! The sysbench suite on one target: guard and load the tables, run each
//! test (EXPLAIN first, outside the measurement), and the postwrite
//! housekeeping after the tests that call for it.

use super::cancelled;
use super::step::StepContext;
use crate::plan::Plan;
use crate::runner::run_step;
use crate::workload::sysbench::catalog::After;
use crate::workload::sysbench::{Sysbench, load};

/// Runs the plan's sysbench tests on the context's target.
pub fn run(plan: &Plan, ctx: &mut StepContext<'_>) -> anyhow::Result<()> {
    let dialect = ctx.server.dialect();
    let connector = ctx.server.connector();
    let suite = Sysbench {
        params: plan.sysbench.clone(),
        dialect,
    };
    let p = &plan.sysbench;
    let label = ctx.label.clone();
    let mut admin = connector.connect()?;
    if load::check_existing(admin.as_mut(), plan.existing)? {
        ctx.view.line(&format!(
            "target {label}: loading {} table(s) × {} rows",
            p.tables, p.table_size
        ));
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get() as u32);
        let view = ctx.view;
        load::create_and_load(
            connector.as_ref(),
            p.tables,
            p.table_size,
            p.seed,
            threads,
            super::cancel_flag(),
            &mut |done, total| {
                view.phase(
                    &format!("{label} load {done}/{total} rows"),
                    done as f64 / total.max(1) as f64,
                );
            },
        )?;
    }
    for (seq, test) in plan.tests.iter().enumerate() {
        if cancelled() {
            break;
        }
        if let Some(note) = load::reset_binlog(admin.as_mut())? {
            ctx.view.line(&format!("target {label}: {note}"));
        }
        let info = suite.step_info(test, dialect);
        let measured_before = ctx.is_measured(&info.name);
        let plans = if measured_before {
            Vec::new()
        } else {
            suite.explain(test, admin.as_mut())
        };
        let step_plan = suite.step_plan(test, &label);
        ctx.measure(
            seq as u32,
            plan.tests.len(),
            &info,
            &plans,
            |conn, cancel, progress| {
                run_step(
                    &step_plan,
                    conn,
                    &|client| suite.client(test, client),
                    cancel,
                    progress,
                )
            },
        )?;
        if test.after == After::Postwrite && !cancelled() {
            let budget =
                load::postwrite_budget(u64::from(p.tables) * p.table_size, p.postwrite_scale);
            ctx.view.phase(
                &format!(
                    "{label} housekeeping (analyze, flush, wait {:.0}s)",
                    budget.as_secs_f64()
                ),
                1.0,
            );
            drop(admin);
            for note in load::postwrite(connector.as_ref(), p.tables, budget, super::cancel_flag())?
            {
                ctx.view.line(&format!("target {label}: {note}"));
            }
            admin = connector.connect()?;
        }
    }
    Ok(())
}
