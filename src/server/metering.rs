//! Metering: a call's charge, taken inside the engine's gate once the input
//! has passed every check the input alone decides, and refunded when the
//! call then fails for a reason of ours; what INSUFFICIENT_CREDITS says.
//! What a call costs is the price list's ([`super::prices`]). The credits
//! charged and refunded are counted in the metrics.

use super::auth::Caller;
use super::prices::Call;
use super::state::AppState;
use crate::error::{Error, ErrorCode};
use crate::store::Charge;

/// A charge taken inside an engine gate (once the input has passed every
/// check the input alone decides) and refunded if the call then fails for a
/// reason that is not the caller's (INTERNAL, RENDER_FAILED, or whatever
/// `refund_on` names).
pub struct Meter {
    st: AppState,
    account: crate::store::Account,
    allowance: i64,
    cost: i64,
    reason: &'static str,
    /// The ledger reference: the report, render or inspection id.
    pub reference: String,
    charged: std::sync::atomic::AtomicBool,
}

impl Meter {
    /// A meter for `call` (its price and ledger reason from the price list)
    /// of `caller` under `reference`.
    pub fn new(st: &AppState, caller: &Caller, call: Call, reference: String) -> Meter {
        Meter {
            st: st.clone(),
            account: caller.account.clone(),
            allowance: caller.plan.monthly_credits,
            cost: call.credits(),
            reason: call.reason(),
            reference,
            charged: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The charged account's id.
    pub fn account_id(&self) -> String {
        self.account.id.clone()
    }

    /// Charges (the gate): INSUFFICIENT_CREDITS when the balance is short.
    pub fn charge(&self) -> crate::error::Result<()> {
        let now = self.st.clock.now();
        let period = super::clock::period_start(self.account.created_at, now);
        match self.st.store.charge(
            &self.account.id,
            self.cost,
            self.allowance,
            period,
            self.reason,
            &self.reference,
            now,
        )? {
            Charge::Charged { .. } => {
                self.charged.store(true, std::sync::atomic::Ordering::SeqCst);
                self.st.metrics.credits_charged(self.cost);
                Ok(())
            }
            Charge::Insufficient { balance, required } => Err(insufficient(balance, required)),
        }
    }

    /// Refunds the charge when `out` failed with a server fault or one of `also`.
    pub fn settle<T>(&self, out: &crate::error::Result<T>, also: &[ErrorCode]) {
        if let Err(e) = out
            && self.charged.load(std::sync::atomic::Ordering::SeqCst)
            && (is_server_fault(e.code) || also.contains(&e.code))
        {
            match self.st.store.refund(&self.reference, "refund: call failed", self.st.clock.now()) {
                Ok(credits) => self.st.metrics.credits_refunded(credits),
                Err(r) => tracing::error!(error = %r, "refund failed"),
            }
        }
    }
}

/// 402 INSUFFICIENT_CREDITS with `{balance, required}`.
pub fn insufficient(balance: i64, required: i64) -> Error {
    Error::new(
        ErrorCode::InsufficientCredits,
        format!("this call costs {required} credits and the balance is {balance}"),
    )
    .with_detail(serde_json::json!({"balance": balance, "required": required}))
}

/// Errors that are our fault: the charge is refunded.
pub fn is_server_fault(code: ErrorCode) -> bool {
    matches!(code, ErrorCode::Internal | ErrorCode::RenderFailed)
}
